"""`agent-eval run` as users type it: exact figures, plain logs, Ctrl-C and resume, mistakes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import typer
import yaml

from agent_eval.cli.common import guarded
from agent_eval.cli.run import EMBEDDED_NEXT
from agent_eval.errors import ConfigError
from agent_eval.view.runs import find_runs
from tests.helpers.cli_runs import ROWS, agent_eval, finish, lines, slow_run, summary, write_dataset
from tests.helpers.llamacpp import run_embedded, servers_on
from tests.helpers.processes import running_with
from tests.helpers.proxy import StartWorkers
from tests.helpers.waits import eventually


async def test_known_answers_give_exact_figures_in_plain_logs(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    workers = await start_workers(2)
    data, run_dir = write_dataset(tmp_path / "say.jsonl"), tmp_path / "run"
    endpoints = [arg for w in workers for arg in ("--endpoint", w.url)]
    process = await agent_eval(
        "run", "--agent", "math_calculator", "--dataset", str(data), *endpoints, "-n", "2",
        "-o", str(run_dir), "eval.ks=[1, 2]", cwd=tmp_path,
    )  # fmt: skip
    code, out, err = await finish(process)
    assert code == 0, err
    assert "\x1b" not in out + err  # not a terminal: no escape codes anywhere
    quality = summary(run_dir)["quality"]
    assert quality["accuracy"]["value"] == 0.5 and quality["pass_at_k"] == {"1": 0.5, "2": 0.5}
    assert "accuracy" in out and "0.500" in out  # the printed figure is the saved one
    assert len(lines(run_dir)) == ROWS * 2
    for name in ("config.yaml", "proxy.log", "workers.json"):
        assert (run_dir / name).is_file(), name
    served = {
        w["url"]: w["served"] for w in json.loads((run_dir / "workers.json").read_text())["workers"]
    }
    assert sum(served.values()) == ROWS * 2 and all(served.values())
    assert f"agent-eval report {run_dir}" in out


CONSOLE_SCRIPT = """import os, sys
with open(os.environ["LOADED_AT_START"], "a") as loaded:
    loaded.write(f"{'math_verify' in sys.modules}\\n")
from agent_eval.__main__ import main
if __name__ == "__main__":
    sys.exit(main())
"""
"""`agent-eval` as pip writes it, noting for each process that runs it (the harness, and each
scoring process as it starts) whether math-verify was already loaded there."""


async def test_the_scoring_pool_is_named_and_its_processes_start_with_math_verify_loaded(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    """Each scoring process importing math-verify (sympy) itself took seconds of CPU apiece,
    while the inference workers started."""
    (worker,) = await start_workers(1)
    data, script = write_dataset(tmp_path / "say.jsonl"), tmp_path / "agent-eval"
    script.write_text(CONSOLE_SCRIPT)
    loaded = tmp_path / "loaded"
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(script), "run", "--dataset", str(data), "--endpoint", worker.url,
        "-o", str(tmp_path / "run"), "reward.workers=3", cwd=tmp_path,
        env={**os.environ, "LOADED_AT_START": str(loaded)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    code, _, err = await finish(process)
    assert code == 0, err
    assert "scoring pool: 3 processes ready in" in err, err
    # The harness, then its 3 scoring processes.
    assert loaded.read_text().split() == ["False", "True", "True", "True"], err


async def test_ctrl_c_keeps_results_and_resume_gives_the_clean_summary(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    common = await slow_run(start_workers, tmp_path)
    clean, broken = tmp_path / "clean", tmp_path / "broken"
    assert (await finish(await agent_eval("run", *common, "-o", str(clean), cwd=tmp_path)))[0] == 0
    process = await agent_eval("run", *common, "-o", str(broken), cwd=tmp_path)
    samples = broken / "samples.jsonl"
    await eventually(lambda: samples.exists() and len(samples.read_bytes().splitlines()) >= 4, 60)
    process.send_signal(signal.SIGINT)
    code, _, err = await finish(process, 60)
    assert code == 130 and "interrupted" in err
    assert f"agent-eval run --resume {broken}" in err
    kept = len(lines(broken))
    assert 4 <= kept < ROWS * 2 and not (broken / "summary.json").exists()
    code, _, err = await finish(await agent_eval("run", "--resume", str(broken), cwd=tmp_path))
    assert code == 0, err
    played = [(r["sample_id"], r["attempt"]) for r in lines(broken)]
    assert len(played) == len(set(played)) == ROWS * 2
    for group in ("quality", "stability"):
        assert summary(broken)[group] == summary(clean)[group]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agent", "math_calculater"], "did you mean 'math_calculator'"),
        (["--dataset", "missing.jsonl"], "missing.jsonl"),
        (["--endpoint", "http://127.0.0.1:9"], "no endpoint answers: http://127.0.0.1:9"),
        (["--backend", "sglang:d1"], "model"),
        (["eval.n_sampels=2"], "did you mean 'eval.n_samples'"),
        (["--config", "nowhere.yaml"], "nowhere.yaml does not exist"),
        (["--resume", "."], "not a run directory"),
    ],
)
async def test_mistakes_end_in_one_message_and_exit_code_2(
    args: list[str], message: str, tmp_path: Path
) -> None:
    code, out, err = await finish(await agent_eval("run", *args, cwd=tmp_path), 60)
    assert code == 2, out + err
    assert message in err and "Traceback" not in err
    assert not any(tmp_path.iterdir()), "a refused run left files behind"  # noqa: ASYNC240


HARNESS_ONLY_REWARD = """import multiprocessing
if multiprocessing.parent_process() is not None:
    raise ImportError("importable in the harness alone")
def score(prediction, gold):
    return prediction.strip() == gold.strip()
"""
"""A reward the run's checks load, whose scoring processes cannot."""


async def test_a_scoring_pool_that_cannot_start_refuses_the_run_before_its_first_attempt(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = await start_workers(1)
    data = write_dataset(tmp_path / "say.jsonl")
    (tmp_path / "harness_only.py").write_text(HARNESS_ONLY_REWARD)
    process = await agent_eval(
        "run", "--dataset", str(data), "--endpoint", worker.url, "-o", "run",
        "reward.function=harness_only:score", cwd=tmp_path,
    )  # fmt: skip
    code, _, err = await finish(process)
    assert code == 2 and "the scoring pool failed to start" in err, err
    assert worker.stats.generation_requests == 0  # no attempt was played
    assert find_runs([tmp_path]) == {}  # `agent-eval view` lists no interrupted run


SLOW_REWARD = """import multiprocessing, time
if multiprocessing.parent_process() is not None:
    time.sleep(30)
def score(prediction, gold):
    return prediction.strip() == gold.strip()
"""
"""A reward whose scoring processes take 30 s to import it."""


async def test_a_scoring_pool_slower_than_its_start_timeout_names_the_setting(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = await start_workers(1)
    data = write_dataset(tmp_path / "say.jsonl")
    (tmp_path / "slow_reward.py").write_text(SLOW_REWARD)
    process = await agent_eval(
        "run", "--dataset", str(data), "--endpoint", worker.url, "-o", "run",
        "reward.function=slow_reward:score", "reward.start_timeout=2", cwd=tmp_path,
    )  # fmt: skip
    code, _, err = await finish(process)
    assert code == 2, err
    assert "the scoring pool did not start within 2 s (reward.start_timeout;" in err, err
    assert worker.stats.generation_requests == 0


async def test_a_run_refused_once_launched_is_no_run_to_list_or_resume(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = await start_workers(1)
    data = write_dataset(tmp_path / "say.jsonl")
    with socket.socket() as taken:  # the proxy's port, taken
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        process = await agent_eval(
            "run", "--dataset", str(data), "--endpoint", worker.url, "-o", "run",
            f"proxy.port={port}", cwd=tmp_path,
        )  # fmt: skip
        code, _, err = await finish(process)
    assert code == 2 and f"cannot listen on 127.0.0.1:{port}" in err, err
    assert find_runs([tmp_path]) == {}  # `agent-eval view` lists no interrupted run
    code, _, err = await finish(await agent_eval("run", "--resume", "run", cwd=tmp_path))
    assert code == 2 and "not a run directory" in err, err


async def test_the_embedded_default_runs_end_to_end_and_leaves_nothing(tmp_path: Path) -> None:
    """README's first command, on the first 3 of its word problems."""
    run_dir = tmp_path / "run"
    args = ("run", "--agent", "math_calculator", "--limit", "3", "-o", str(run_dir))
    code, out, err = await run_embedded(*args, cwd=tmp_path)
    assert code == 0, err
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert saved["dataset"]["name"] == "word_problems" and saved["eval"]["n_samples"] == 4
    assert saved["agent"]["options"] == {"tool_use": "stop_on_first_tool"}
    assert len(lines(run_dir)) == 12 and summary(run_dir)["scored"] == 12
    for name in ("config.yaml", "summary.json", "workers.json", "proxy.log"):
        assert (run_dir / name).is_file(), name
    assert sorted(p.name for p in (run_dir / "workers").glob("*.log")) == [
        "worker-0.log",
        "worker-1.log",
    ]
    assert all(r["model_calls"] == 1 for r in lines(run_dir))  # the real model answered once
    workers = json.loads((run_dir / "workers.json").read_text())["workers"]
    ports = {int(w["url"].rsplit(":", 1)[1]) for w in workers}
    assert servers_on(ports) == [] and not running_with(str(run_dir / "proxy.json"))
    assert "Embedded model (SmolLM2-135M on CPU): word_problems, 4 attempt(s)" in out
    assert "pass@4" in out and "pass^4" in out and "maj@4" in out
    assert " ".join(out.split()).endswith(" ".join(EMBEDDED_NEXT.split()))


def test_mistakes_raised_inside_concurrent_work_still_end_in_one_message(capsys) -> None:
    def engine_failing() -> None:
        inner = ExceptionGroup("scoring", [ConfigError("the reward module moved")])
        raise ExceptionGroup("engine", [ConfigError("the reward module moved"), inner])

    context = SimpleNamespace(obj=False)  # no --debug
    with pytest.raises(typer.Exit) as stopped:
        guarded(context, engine_failing)
    assert stopped.value.exit_code == 2
    assert capsys.readouterr().err.strip() == "error: the reward module moved"

    def engine_with_a_bug() -> None:
        raise ExceptionGroup("engine", [ConfigError("a mistake"), ValueError("a bug")])

    with pytest.raises(ExceptionGroup):  # a bug beside a mistake is not hidden
        guarded(context, engine_with_a_bug)
