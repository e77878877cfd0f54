"""`run --resume`: it refuses what would change the results, and `--replay-unscored` replays
the unscored attempts, and only those."""

from __future__ import annotations

import asyncio
import json
import shutil
from contextlib import AsyncExitStack
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from agent_eval.agents.trajectory import Trajectory, TrajectoryError
from agent_eval.data import Sample
from agent_eval.metrics.performance import ATTEMPTS_PER_S
from agent_eval.report.runs import load_run
from agent_eval.results.files import SUMMARY, UNSCORED, RunDirectory
from agent_eval.results.summary import summary_json
from agent_eval.run.config import CONFIG_FILE, RunConfig, load_run_config, save_run_config
from agent_eval.run.engine import attempt_record
from agent_eval.run.evaluation import resolved_config, resume_differences
from agent_eval.run.identity import DIGEST, RUN_FACTS, describe, save_run_facts
from agent_eval.run.scoring import Scored
from tests.helpers.cli_runs import ROWS, agent_eval, finish, lines, summary, write_dataset
from tests.helpers.proxy import StartWorkers, worker_starter


def record_line(sample_id: str, error: TrajectoryError | None) -> bytes:
    """A finished attempt's samples.jsonl line, stopped by `error` if one is given."""
    trajectory = Trajectory(error=error)
    scored = Scored(
        reward=0.0 if error else 1.0,
        correct=not error,
        answer=None if error else "1",
        turn_rewards=None,
        turn_answers=None,
        failure=None,
    )
    record = attempt_record(
        Sample(sample_id, "q", "1"), 0, 7, f"{sample_id}-0", trajectory, scored, 0.1
    )
    return record.to_line()


def test_set_aside_moves_the_unscored_records_and_keeps_the_rest_as_they_were(
    tmp_path: Path,
) -> None:
    run = RunDirectory(tmp_path)
    kept = [record_line("right", None), record_line("long", TrajectoryError("max_turns", "m"))]
    unscored = [
        record_line("down", TrajectoryError("upstream_error", "502")),
        record_line("odd", TrajectoryError("a_third_party_kind", "?")),  # unknown: infra
    ]
    run.samples.write_bytes(b"".join([kept[0], unscored[0], kept[1], unscored[1]]))
    assert [r.sample_id for r in run.set_aside_unscored()] == ["down", "odd"]
    assert run.samples.read_bytes() == b"".join(kept)
    aside = [json.loads(line) for line in (tmp_path / UNSCORED).read_text().splitlines()]
    assert [r["sample_id"] for r in aside] == ["down", "odd"]
    assert all(datetime.fromisoformat(r["set_aside_at"]).tzinfo for r in aside)
    assert [r.sample_id for r in RunDirectory(tmp_path).records()] == ["right", "long"]
    # Nothing left to set aside: both files stay as they are.
    assert run.set_aside_unscored() == []
    assert run.samples.read_bytes() == b"".join(kept)
    assert len((tmp_path / UNSCORED).read_text().splitlines()) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["samples.jsonl", UNSCORED]


async def test_replay_unscored_replays_exactly_the_unscored_attempts(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = await start_workers(1)
    data = write_dataset(tmp_path / "say.jsonl")
    common = ("--dataset", str(data), "--endpoint", worker.url, "-n", "2")
    clean, broken = tmp_path / "clean", tmp_path / "broken"
    assert (await finish(await agent_eval("run", *common, "-o", str(clean), cwd=tmp_path)))[0] == 0
    # An interrupted run: the first half of its attempts finished, no summary yet.
    shutil.copytree(clean, broken)
    (broken / "summary.json").unlink()
    first_half = (broken / "samples.jsonl").read_bytes().splitlines(keepends=True)[:ROWS]
    (broken / "samples.jsonl").write_bytes(b"".join(first_half))

    # It is resumed while the worker answers 500 to everything: the rest fail, unscored.
    worker.behavior.error_status = 500
    # How failures are retried and replayed and how many may stay unscored are not what a run's
    # results are: a resume may change them.
    no_replays = ("proxy.retry.max_retries=0", "eval.replays=0", "eval.max_unscored=1")
    code, _, err = await finish(
        await agent_eval("run", "--resume", str(broken), *no_replays, cwd=tmp_path)
    )
    assert code == 0, err
    failed = {(r["sample_id"], r["attempt"]): r["seed"] for r in lines(broken)[ROWS:]}
    assert len(failed) == ROWS and all(r["error"]["class"] == "infra" for r in lines(broken)[ROWS:])

    worker.behavior.error_status = None
    code, _, err = await finish(
        await agent_eval("run", "--resume", str(broken), "--replay-unscored", cwd=tmp_path)
    )
    assert code == 0, err
    assert f"replaying {ROWS} unscored attempts" in err
    aside = [json.loads(line) for line in (broken / UNSCORED).read_text().splitlines()]
    assert {(r["sample_id"], r["attempt"]): r["seed"] for r in aside} == failed
    assert all("set_aside_at" in r for r in aside)
    final = lines(broken)
    assert (broken / "samples.jsonl").read_bytes().startswith(b"".join(first_half))
    replayed = {(r["sample_id"], r["attempt"]): r["seed"] for r in final[ROWS:]}
    assert replayed == failed  # the same attempts, with the same seeds
    assert len({(r["sample_id"], r["attempt"]) for r in final}) == len(final) == ROWS * 2
    assert all(r["error"] is None for r in final)
    for group in ("quality", "stability"):
        assert summary(broken)[group] == summary(clean)[group]

    # Nothing unscored left: said so, and the run finishes as a plain resume. (--retry-errors,
    # the old name, still runs.)
    code, _, err = await finish(
        await agent_eval("run", "--resume", str(broken), "--retry-errors", cwd=tmp_path)
    )
    assert code == 0, err
    assert "no unscored attempts; finishing it as a normal resume" in err
    assert lines(broken) == final


async def resumed_run(start_workers: StartWorkers, tmp_path: Path) -> tuple[Path, str, str]:
    """A run interrupted after 6 of its 20 attempts, then resumed; its folder and the resume's
    output and messages."""
    (worker,) = await start_workers(1)
    data = write_dataset(tmp_path / "say.jsonl")
    run = tmp_path / "run"
    args = ("--dataset", str(data), "--endpoint", worker.url, "-n", "2", "-o", str(run))
    assert (await finish(await agent_eval("run", *args, cwd=tmp_path)))[0] == 0
    # Interrupted after 6 of its 20 attempts: those are kept, the other 14 are played.
    (run / "summary.json").unlink()
    kept = (run / "samples.jsonl").read_bytes().splitlines(keepends=True)[:6]
    (run / "samples.jsonl").write_bytes(b"".join(kept))

    code, out, err = await finish(await agent_eval("run", "--resume", str(run), cwd=tmp_path))
    assert code == 0, err
    return run, out, err


async def _resume_once(folder: Path) -> tuple[Path, str, str]:
    """`resumed_run` in `folder`, its worker gone once the resume ended."""
    async with AsyncExitStack() as stack:
        return await resumed_run(worker_starter(stack), folder)


@pytest.fixture(scope="module")
def a_resumed_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """One resumed run (`resumed_run`), made once: its tests only read it."""
    return asyncio.run(_resume_once(tmp_path_factory.mktemp("resumed")))


def test_a_resumed_run_shows_the_figures_of_all_its_attempts_kept_and_new(
    a_resumed_run: tuple[Path, str, str],
) -> None:
    run, out, err = a_resumed_run
    assert f"resuming {run}: 6 finished attempts kept, 14 of 20 to play" in err
    last = [line for line in out.splitlines() if line.startswith("[")][-1]
    figures = summary(run)["quality"]["accuracy"]
    shown = f"acc {figures['value']:.3f} [{figures['low']:.2f}, {figures['high']:.2f}]"
    assert last.startswith(f"[20/20 100%] {shown} | "), (last, figures)


@pytest.mark.parametrize("flag", ["--replay-unscored", "--force"])
async def test_resume_flags_without_resume_are_a_mistake(flag: str, tmp_path: Path) -> None:
    code, out, err = await finish(await agent_eval("run", flag, cwd=tmp_path), 60)
    assert code == 2, out + err
    assert flag in err and "--resume" in err and "Traceback" not in err


def started_run(tmp_path: Path) -> Path:
    """A run directory as a run leaves it when it starts: its config.yaml and run.json."""
    run = tmp_path / "run"
    data = write_dataset(tmp_path / "say.jsonl")
    given = [
        f"dataset.name={data}",
        "rollout.endpoints=['http://127.0.0.1:9']",
        f"output.dir={run}",
    ]
    config = load_run_config(None, {}, given)
    save_run_config(resolved_config(config), run)
    save_run_facts(config)
    return run


def resuming(run: Path, flags: dict[str, Any], overrides: list[str]) -> RunConfig:
    """The config `run --resume RUN` would run with these flags and overrides."""
    return load_run_config(run / CONFIG_FILE, {**flags, "output.dir": run}, overrides)


@pytest.mark.parametrize(
    ("flags", "overrides", "changed"),
    [
        ({"eval.seed": 5}, [], {"eval.seed": (0, 5)}),
        (
            {"dataset.limit": 4, "eval.n_samples": 2},
            [],
            {"dataset.limit": (None, 4), "eval.n_samples": (1, 2)},
        ),
        (
            {},
            ["reward.function=mypkg.rewards:exact"],
            {"reward.function": ("math", "mypkg.rewards:exact")},
        ),
        (
            {"sampling.temperature": 0.7},
            ["agent.max_turns=3"],
            {"agent.max_turns": (8, 3), "sampling.temperature": (0.0, 0.7)},
        ),
        (
            {"model.path": "/ckpt/2"},
            ["model.name=other", "agent.options={tool_use: stop_on_first_tool}"],
            {
                "model.path": (None, "/ckpt/2"),
                "model.name": (None, "other"),
                "agent.options": (
                    {"tool_use": "run_llm_again"},
                    {"tool_use": "stop_on_first_tool"},
                ),
            },
        ),
        # Where and how fast the model runs is no part of what the results are.
        (
            {"eval.concurrency": 3, "eval.processes": 2},
            [
                "eval.attempt_timeout=5",
                "proxy.retry.max_retries=0",
                "scheduler.type=slurm",
                "rollout.endpoints=['http://127.0.0.1:8']",
            ],
            {},
        ),
    ],
)
def test_a_resume_differs_in_what_changes_results_and_in_nothing_else(
    tmp_path: Path, flags: dict[str, Any], overrides: list[str], changed: dict[str, tuple[Any, Any]]
) -> None:
    run = started_run(tmp_path)
    found = resume_differences(resuming(run, flags, overrides))
    assert {d.key: (d.saved, d.resumed) for d in found} == changed


def test_an_edited_dataset_file_differs_by_its_digest(tmp_path: Path) -> None:
    run = started_run(tmp_path)
    assert json.loads((run / RUN_FACTS).read_text())[DIGEST]
    assert resume_differences(resuming(run, {}, [])) == []
    with (tmp_path / "say.jsonl").open("ab") as data:
        data.write(b'{"question": "Say 10", "answer": "#### 10"}\n')
    (found,) = resume_differences(resuming(run, {}, []))
    assert found.key == DIGEST and found.saved != found.resumed
    assert "(the dataset file changed since the run started)" in describe(run, [found])


def test_the_message_names_both_setups(tmp_path: Path) -> None:
    run = started_run(tmp_path)
    found = resume_differences(resuming(run, {"eval.seed": 5, "dataset.limit": 10}, []))
    assert describe(run, found) == (
        f"{run} was made with dataset.limit=None and eval.seed=0; this resume would use "
        "dataset.limit=10 and eval.seed=5: results would mix two setups."
    )


def test_a_run_without_run_json_is_resumed_without_a_dataset_check(tmp_path: Path) -> None:
    run = started_run(tmp_path)
    (run / RUN_FACTS).unlink()  # made by an agent-eval that did not write it
    (tmp_path / "say.jsonl").write_text("")
    assert resume_differences(resuming(run, {}, [])) == []


async def test_the_cli_refuses_a_resume_that_would_mix_setups_unless_forced(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = await start_workers(1)
    data = write_dataset(tmp_path / "say.jsonl")
    run = tmp_path / "run"
    args = ("run", "--dataset", str(data), "--endpoint", worker.url, "-o", str(run))
    assert (await finish(await agent_eval(*args, cwd=tmp_path)))[0] == 0
    config, samples = (run / CONFIG_FILE).read_bytes(), (run / "samples.jsonl").read_bytes()

    resume = ("run", "--resume", str(run))
    code, _, err = await finish(
        await agent_eval(*resume, "--seed", "5", "--limit", "4", cwd=tmp_path)
    )
    assert code == 2, err
    assert (
        f"{run} was made with dataset.limit=None and eval.seed=0; this resume would use "
        "dataset.limit=4 and eval.seed=5: results would mix two setups. Resume without those "
        "settings, or pass --force to mix them anyway."
    ) in err
    # Nothing was launched: a run would have saved its config again.
    assert (run / CONFIG_FILE).read_bytes() == config
    assert (run / "samples.jsonl").read_bytes() == samples

    code, _, err = await finish(await agent_eval(*resume, "-j", "3", cwd=tmp_path))
    assert code == 0, err
    assert "warning" not in err and (run / "samples.jsonl").read_bytes() == samples

    with data.open("ab") as handle:
        handle.write(b'{"question": "Say 10", "answer": "#### 10"}\n')
    code, _, err = await finish(await agent_eval(*resume, cwd=tmp_path))
    assert code == 2 and "dataset file changed since the run started" in err, err
    code, _, err = await finish(await agent_eval(*resume, "--force", cwd=tmp_path))
    assert code == 0, err
    assert "warning:" in err and "results mix two setups" in err and "--force" in err
    assert len(lines(run)) == ROWS + 1  # the new row was played too, as asked


async def test_the_report_of_a_resumed_run_gives_the_figures_of_its_summary(
    a_resumed_run: tuple[Path, str, str], tmp_path: Path
) -> None:
    run, _, _ = a_resumed_run
    written = json.loads((run / SUMMARY).read_text())
    # Every figure, the rates the resume measured over its 14 attempts included.
    assert summary_json(load_run(run).summary) == written
    code, out, err = await finish(await agent_eval("report", str(run), cwd=tmp_path))
    assert code == 0, err
    rate = written["efficiency"]["throughput"]["attempts_per_s"]
    (shown,) = [line.split() for line in out.splitlines() if ATTEMPTS_PER_S.unit in line]
    assert shown == [ATTEMPTS_PER_S.unit, f"{rate:{ATTEMPTS_PER_S.spec}}"]
