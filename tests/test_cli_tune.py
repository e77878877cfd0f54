"""`agent-eval tune` as users run it: mistakes refused before a launch, Ctrl-C then the same
command again, best.yaml, and --confirm on the whole dataset."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest
import yaml

from agent_eval.data import load_dataset
from agent_eval.data.subset import seeded_subset
from agent_eval.tune.study import CONTINUES, INTERRUPTED
from agent_eval.tune.study_files import CONFIRM_FILE, FAILURE, RUN_DIR, load_study, optuna_module
from tests.helpers.cli_runs import agent_eval, finish, lines
from tests.helpers.proxy import StartWorkers
from tests.helpers.terminal import OnTerminal, worker_rows
from tests.helpers.tune_jobs import two_step_workers, write_sums
from tests.helpers.waits import eventually

TEMPERATURE = "sampling.temperature: {float: [0.0, 1.2]}\n"


def processes_under(folder: Path) -> list[str]:
    """Command lines of live processes naming a path inside `folder`."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if str(folder) in text:
            found.append(text)
    return found


@pytest.mark.parametrize(
    ("space", "args", "message"),
    [
        ("sampling.temprature: {float: [0, 1]}", [], "did you mean 'sampling.temperature'"),
        ("sampling.temperature: {float: [0.5, 0.5]}", [], "is empty"),
        (
            "sampling.temperature: {float: [-1, 1]}",
            [],
            "sampling.temperature=-1.0 would be refused",
        ),
        ("agent.options.tool_uze: {categorical: [a, b]}", [], "did you mean 'tool_use'"),
        (TEMPERATURE, ["--objective", "quality.acuracy"], "did you mean 'quality.accuracy'"),
        (TEMPERATURE, ["--objective", "efficiency.tokens.mean_completion:most"], ":max or :min"),
    ],
)
async def test_a_mistake_is_refused_before_anything_starts(
    tmp_path: Path, space: str, args: list[str], message: str
) -> None:
    (tmp_path / "space.yaml").write_text(space)
    data = write_sums(tmp_path / "sums.jsonl")
    command = ["tune", "--space", "space.yaml", "-d", str(data), "-o", "tune", *args]
    code, out, err = await finish(await agent_eval(*command, cwd=tmp_path), 60)
    assert code == 2, out + err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "tune").exists()


async def test_ctrl_c_then_the_same_command_continues_and_confirm_plays_the_best_in_full(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = await two_step_workers(start_workers, wrong_above_temperature=0.5, latency=0.1)
    (tmp_path / "space.yaml").write_text(TEMPERATURE)
    data = write_sums(tmp_path / "sums.jsonl", rows=12, wrong_gold=frozenset(range(7, 13)))
    tune_dir = tmp_path / "tune"
    command = [
        "tune", "--space", "space.yaml", "-d", str(data), "--endpoint", worker.url,
        "--trials", "3", "--subset", "6", "--pruner", "none", "-j", "1", "-o", "tune",
    ]  # fmt: skip
    process = await agent_eval(*command, cwd=tmp_path)
    second = tune_dir / "trial-1" / "samples.jsonl"
    await eventually(lambda: second.exists() and len(second.read_bytes().splitlines()) >= 2, 90)
    process.send_signal(signal.SIGINT)
    code, out, err = await finish(process, 60)
    assert code == 130 and "interrupted" in err and "the same command again" in err, out + err
    assert not processes_under(tune_dir)
    state = optuna_module().trial.TrialState
    stopped = load_study(tune_dir).trials
    assert [t.state for t in stopped] == [state.COMPLETE, state.FAIL]
    assert stopped[1].user_attrs[FAILURE] == INTERRUPTED
    kept = len(lines(tune_dir / "trial-1"))

    code, out, err = await finish(await agent_eval(*command, "--confirm", cwd=tmp_path), 120)
    assert code == 0, out + err
    trials = load_study(tune_dir).trials
    assert [t.state for t in trials] == [state.COMPLETE, state.FAIL, state.COMPLETE, state.COMPLETE]
    again = trials[2]
    assert again.user_attrs[CONTINUES] == 1 and again.user_attrs[RUN_DIR] == "trial-1"
    assert again.params == stopped[1].params
    played = [(r["sample_id"], r["attempt"]) for r in lines(tune_dir / "trial-1")]
    assert len(played) == len(set(played)) == 6 and kept <= 6  # resumed, nothing played twice

    best = max((t for t in trials if t.values), key=lambda t: t.values[0])
    written = yaml.safe_load((tune_dir / "best.yaml").read_text())
    assert written["sampling"]["temperature"] == best.params["sampling.temperature"]
    assert written["dataset"]["subset"] is None
    confirmed = json.loads((tune_dir / CONFIRM_FILE).read_text())["confirmations"]
    assert [c["trial"] for c in confirmed] == [best.number]
    full_run = tune_dir / confirmed[0]["run_dir"]
    assert len(lines(full_run)) == 12  # the whole dataset, not the subset
    figures = confirmed[0]["objectives"]["quality.accuracy"]
    assert figures["subset"] == best.values[0]
    assert (
        figures["full"]
        == json.loads((full_run / "summary.json").read_text())["quality"]["accuracy"]["value"]
    )
    # Half the golds are off: the subset's accuracy is the share of the right ones it drew.
    drawn = [item.id for item in seeded_subset(load_dataset(str(data)), 6, 0)]
    subset_accuracy = sum(int(sample[1:]) < 7 for sample in drawn) / 6
    assert figures["subset"] == subset_accuracy and figures["full"] == 0.5
    gap = subset_accuracy - 0.5
    said = "the subset flattered the winner" if gap > 0 else "did not flatter the winner"
    assert "on the whole dataset: accuracy 0.500" in out and said in out
    assert "agent-eval run --config" in out
    assert not processes_under(tune_dir)


async def test_each_trials_worker_panel_counts_only_that_trials_model_calls(
    start_workers: StartWorkers, on_terminal: OnTerminal, tmp_path: Path
) -> None:
    (worker,) = await two_step_workers(start_workers)
    (tmp_path / "space.yaml").write_text(TEMPERATURE)
    data = write_sums(tmp_path / "sums.jsonl", rows=4)
    command = [
        sys.executable, "-m", "agent_eval", "tune", "--space", "space.yaml", "-d", data.name,
        "--endpoint", worker.url, "--trials", "2", "--pruner", "none", "-j", "2", "-o", "tune",
    ]  # fmt: skip
    final = (await on_terminal(command, tmp_path)).final
    calls = []
    for trial in (0, 1):
        # A trial's last frame: from its bar, titled by its settings, to the line of its end.
        end = final.index(f"trial {trial}  complete")
        last = final[final.rindex(f"trial {trial}: sampling.temperature=", 0, end) : end]
        run_dir = tmp_path / "tune" / f"trial-{trial}"
        made = sum(record["model_calls"] for record in lines(run_dir))
        counted = json.loads((run_dir / "workers.json").read_text())["workers"]
        assert [served for _, served in worker_rows(last)] == [made], last
        assert [w["served"] for w in counted] == [made]
        calls.append(made)
    assert worker.stats.generation_requests == sum(calls)  # the proxy served both
