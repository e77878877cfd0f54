"""A run played by several engine processes: the same figures, Ctrl-C and resume, a crash."""

from __future__ import annotations

import importlib.util
import signal
from collections import Counter
from pathlib import Path

import pytest

from agent_eval.errors import ConfigError
from agent_eval.run.config import RunConfig, load_run_config
from agent_eval.run.evaluation import plan
from agent_eval.run.parts import scoring_workers
from agent_eval.run.shards import shard_of
from tests.helpers.cli_runs import ROWS, agent_eval, finish, lines, summary, write_dataset
from tests.helpers.processes import running_with
from tests.helpers.proxy import StartWorkers
from tests.helpers.waits import eventually

CHILD = "agent_eval.run.shards.child"
CRASHING_RUNNER = """
import os

from agent_eval.agents.math_calculator import MathCalculatorAgent


class CrashInChild(MathCalculatorAgent):
    async def run(self, sample, ctx):
        if os.environ.get("AGENT_EVAL_API_KEY"):
            os._exit(3)
        return await super().run(sample, ctx)
"""


def test_samples_spread_evenly_and_stay_put() -> None:
    ids = [f"gsm8k-{i}" for i in range(4000)]
    counts = Counter(shard_of(sample_id, 4) for sample_id in ids)
    assert set(counts) == {0, 1, 2, 3} and all(900 < n < 1100 for n in counts.values())
    # The shard of a sample must not change between processes, machines or releases: a
    # resumed run tells each engine process only of its own samples' finished attempts.
    assert [shard_of(f"gsm8k-{i}", 4) for i in range(12)] == [3, 0, 2, 2, 2, 1, 2, 3, 1, 1, 1, 1]
    assert (shard_of("q1", 3), shard_of("sessions-7", 8)) == (2, 0)


def test_engine_processes_share_the_scoring_processes() -> None:
    def workers(**settings: object) -> int:
        return scoring_workers(RunConfig.model_validate(settings))

    assert workers(reward={"workers": 4}) == 4
    assert workers(reward={"workers": 4}, eval={"processes": 2}) == 2
    assert workers(reward={"workers": 3}, eval={"processes": 2}) == 2
    assert workers(reward={"workers": 2}, eval={"processes": 8}) == 1


async def endpoints_and_data(
    start_workers: StartWorkers, tmp_path: Path, latency: float = 0.0
) -> list[str]:
    """`run` arguments for the known-answer data set over two mock workers."""
    workers = await start_workers(2)
    for worker in workers:
        worker.behavior.latency = latency
    data = write_dataset(tmp_path / "say.jsonl")
    return ["--dataset", str(data), *[a for w in workers for a in ("--endpoint", w.url)]]


async def test_three_processes_give_the_figures_of_one(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    common = [*await endpoints_and_data(start_workers, tmp_path), "-n", "2", "eval.ks=[1, 2]"]
    one, three = tmp_path / "one", tmp_path / "three"
    assert (await finish(await agent_eval("run", *common, "-o", str(one), cwd=tmp_path)))[0] == 0
    args = ("run", *common, "-o", str(three), "eval.processes=3")
    code, out, err = await finish(await agent_eval(*args, cwd=tmp_path))
    assert code == 0, err
    played = [(r["sample_id"], r["attempt"]) for r in lines(three)]
    assert len(played) == len(set(played)) == ROWS * 2
    # Every shard's samples are there, so the two engine processes played theirs.
    assert {shard_of(sample_id, 3) for sample_id, _ in played} == {0, 1, 2}
    assert (three / "engine-1.log").is_file() and (three / "engine-2.log").is_file()
    for group in ("quality", "stability"):
        assert summary(three)[group] == summary(one)[group]
    assert summary(three)["quality"]["accuracy"]["value"] == 0.5
    assert "0.500" in out and not running_with(CHILD, cwd=tmp_path)


async def test_ctrl_c_stops_every_process_and_resume_finishes(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    common = await endpoints_and_data(start_workers, tmp_path, latency=0.3)
    run_dir = tmp_path / "run"
    args = ("run", *common, "-n", "3", "-j", "1", "-o", str(run_dir), "--processes", "2")
    process = await agent_eval(*args, cwd=tmp_path)
    samples = run_dir / "samples.jsonl"
    await eventually(lambda: samples.exists() and len(samples.read_bytes().splitlines()) >= 2, 60)
    process.send_signal(signal.SIGINT)
    code, _, err = await finish(process, 60)
    assert code == 130 and f"agent-eval run --resume {run_dir}" in err
    assert not running_with(CHILD, cwd=tmp_path)
    code, _, err = await finish(await agent_eval("run", "--resume", str(run_dir), cwd=tmp_path))
    assert code == 0, err
    played = [(r["sample_id"], r["attempt"]) for r in lines(run_dir)]
    assert len(played) == len(set(played)) == ROWS * 3


async def test_a_crashed_engine_process_ends_the_run_with_its_log(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    (tmp_path / "crashing.py").write_text(CRASHING_RUNNER)
    common = await endpoints_and_data(start_workers, tmp_path)
    args = ("run", "--agent", "crashing:CrashInChild", *common, "-o", str(tmp_path / "run"))
    code, _, err = await finish(await agent_eval(*args, "eval.processes=2", cwd=tmp_path))
    assert code == 2 and "Traceback" not in err
    assert "engine process 1 exited with code 3" in err and "engine-1.log" in err
    assert f"agent-eval run --resume {tmp_path / 'run'}" in err
    assert not running_with(CHILD, cwd=tmp_path)


def test_the_engine_on_ray_without_ray_is_refused_before_any_launch(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    found = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *rest: None if name == "ray" else found(name)
    )
    config = load_run_config(None, {}, ["eval.engine=ray", f"output.dir={tmp_path}"])
    with pytest.raises(
        ConfigError, match=r"eval.engine=ray needs Ray: pip install 'agent-eval\[ray\]'"
    ):
        plan(config)
