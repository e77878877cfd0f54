"""The engine: every attempt played, scored, streamed to disk, resumable, summarised exactly."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from openai import AsyncOpenAI

from agent_eval.agents import RunContext, Trajectory, load_runner
from agent_eval.data import Session, load_dataset
from agent_eval.results.files import RunDirectory
from agent_eval.results.record import AttemptRecord
from agent_eval.results.summary import summary_json
from agent_eval.rewards import RewardScorer, gsm8k_gold
from agent_eval.run.config import RunConfig
from agent_eval.run.engine import Engine, Progress, attempt_seed
from agent_eval.run.parts import engine_config
from tests.helpers.processes import alive
from tests.helpers.proxy import StartProxy, StartWorkers
from tests.helpers.waits import eventually

WRONG = {"gsm8k_mini-3", "gsm8k_mini-7", "gsm8k_mini-11"}


class KnownAnswers:
    """Answers every sample right except the ones listed, and the first attempt of odd lines."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.in_flight = 0
        self.most_in_flight = 0
        self.seeds: dict[tuple[str, str], int] = {}

    async def run(self, sample: Any, ctx: RunContext) -> Trajectory:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        self.seeds[(sample.id, ctx.session_id)] = ctx.seed
        await asyncio.sleep(self.delay)
        self.in_flight -= 1
        if isinstance(sample, Session):
            return Trajectory(
                turn_outputs=[f"Answer: {e}" for e in sample.expected_answers()[:-1]] + ["no idea"]
            )
        gold = gsm8k_gold(sample.answer)
        return Trajectory(final_output=f"Answer: {int(gold) + 1 if sample.id in WRONG else gold}")


@pytest.fixture
async def scorer() -> AsyncIterator[RewardScorer]:
    async with RewardScorer(max_workers=2) as pool:
        yield pool


@pytest.fixture
def client() -> AsyncOpenAI:
    return AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="unused")


def records(path: Path) -> list[AttemptRecord]:
    """The attempts in a run directory, in the order they finished."""
    return list(RunDirectory(path).records())


async def run(runner: Any, scorer: RewardScorer, client: AsyncOpenAI, path: Path, **settings: Any):
    items = list(load_dataset(settings.pop("dataset", "gsm8k_mini")))
    run_config = RunConfig.model_validate({"eval": {"n_samples": 2, "concurrency": 4, **settings}})
    config = engine_config(run_config, "m")
    engine = Engine(runner, scorer, client, config)
    return engine, await engine.run(items, RunDirectory(path), total=len(items))


async def test_every_attempt_is_played_scored_and_summarised(
    scorer: RewardScorer, client: AsyncOpenAI, tmp_path: Path
) -> None:
    runner = KnownAnswers(delay=0.01)
    engine, summary = await run(runner, scorer, client, tmp_path)
    played = records(tmp_path)
    assert len(played) == 72 and len({(r.sample_id, r.attempt) for r in played}) == 72
    assert sum(r.correct for r in played) == 66
    data = summary.to_dict()
    assert data["quality"]["accuracy"]["value"] == pytest.approx(66 / 72)
    assert json.loads((tmp_path / "summary.json").read_text()) == summary_json(summary)
    assert runner.most_in_flight <= 4
    assert engine.progress.done == 72 and engine.progress.run.correct == 66
    first = next(r for r in played if r.sample_id == "gsm8k_mini-1" and r.attempt == 1)
    assert (
        first.seed
        == attempt_seed(0, "gsm8k_mini-1", 1)
        == runner.seeds[("gsm8k_mini-1", "gsm8k_mini-1-1")]
    )
    assert (
        first.answer == gsm8k_gold(next(load_dataset("gsm8k_mini")).answer)
        or first.sample_id != "gsm8k_mini-1"
    )


async def test_resume_finishes_the_run_with_the_same_summary(
    scorer: RewardScorer, client: AsyncOpenAI, tmp_path: Path
) -> None:
    _, whole = await run(KnownAnswers(), scorer, client, tmp_path / "whole")

    def stop_after_ten(progress: Progress) -> None:
        if progress.done == 10:
            interrupted.cancel()  # as Ctrl-C does, mid-run

    items = list(load_dataset("gsm8k_mini"))
    config = engine_config(
        RunConfig.model_validate({"eval": {"n_samples": 2, "concurrency": 4}}), "m"
    )
    broken = Engine(KnownAnswers(delay=0.01), scorer, client, config, on_progress=stop_after_ten)
    interrupted = asyncio.create_task(broken.run(items, RunDirectory(tmp_path / "resumed")))
    with pytest.raises(asyncio.CancelledError):
        await interrupted
    kept = len(records(tmp_path / "resumed"))
    assert 10 <= kept < 72
    with (tmp_path / "resumed" / "samples.jsonl").open("a") as handle:
        handle.write('{"sample_id": "torn')  # a write the crash cut short
    resumed_runner = KnownAnswers()
    _, resumed = await run(resumed_runner, scorer, client, tmp_path / "resumed")
    assert len(resumed_runner.seeds) == 72 - kept, "done attempts were played again"
    assert len(records(tmp_path / "resumed")) == 72
    for group in ("quality", "stability"):
        assert resumed.to_dict()[group] == whole.to_dict()[group]
    # The rates are of this run's attempts, as the live view counts them.
    rates = resumed.throughput
    assert rates.attempts_per_s * rates.wall_time_s == pytest.approx(72 - kept)


async def run_slowly(path: str) -> None:
    """A whole run at a walking pace, for a process the test kills."""
    async with RewardScorer(max_workers=1) as scorer:
        client = AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="unused")
        await run(KnownAnswers(delay=0.05), scorer, client, Path(path))


def children(pid: int) -> list[int]:
    """Pids whose parent is `pid`, read from /proc."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


async def test_a_killed_engine_resumes_to_the_same_summary(
    scorer: RewardScorer, client: AsyncOpenAI, tmp_path: Path
) -> None:
    _, whole = await run(KnownAnswers(), scorer, client, tmp_path / "whole")
    killed = tmp_path / "killed"
    script = "import asyncio, sys; from tests.test_engine import run_slowly; "
    script += "asyncio.run(run_slowly(sys.argv[1]))"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, str(killed), cwd=Path(__file__).parents[1]
    )
    samples = killed / "samples.jsonl"
    await eventually(lambda: samples.exists() and len(samples.read_bytes().splitlines()) >= 10, 60)
    scorers = children(process.pid)
    assert scorers, "the run's reward workers were not found"
    process.kill()  # SIGKILL: no handler runs, nothing is flushed on the way out
    assert await process.wait() == -signal.SIGKILL
    await eventually(lambda: not any(alive(pid) for pid in scorers), 10)
    kept = len(records(killed))
    assert kept < 72, "the run finished before it was killed"
    resumed_runner = KnownAnswers()
    _, resumed = await run(resumed_runner, scorer, client, killed)
    assert len(resumed_runner.seeds) == 72 - kept
    played = [(r.sample_id, r.attempt) for r in records(killed)]
    assert len(played) == len(set(played)) == 72
    for group in ("quality", "stability"):
        assert resumed.to_dict()[group] == whole.to_dict()[group]


class Troubled:
    """Hangs on one sample, crashes on another."""

    async def run(self, sample: Any, ctx: RunContext) -> Trajectory:
        if sample.id == "gsm8k_mini-1":
            await asyncio.sleep(30)
        if sample.id == "gsm8k_mini-2":
            raise RuntimeError("bug in a custom runner")
        return Trajectory(final_output=f"Answer: {gsm8k_gold(sample.answer)}")


async def test_timeouts_and_runner_bugs_are_recorded_and_the_run_goes_on(
    scorer: RewardScorer, client: AsyncOpenAI, tmp_path: Path
) -> None:
    settings = {"n_samples": 1, "attempt_timeout": 0.5, "ks": [1], "replays": 0}
    engine, summary = await run(Troubled(), scorer, client, tmp_path, max_unscored=1.0, **settings)
    by_id = {r.sample_id: r for r in records(tmp_path)}
    assert by_id["gsm8k_mini-1"].error_kind == "timeout"
    assert by_id["gsm8k_mini-2"].error == {
        "kind": "runner_error",
        "class": "infra",
        "worker": None,
        "message": "RuntimeError: bug in a custom runner",
    }
    assert sum(r.correct is True for r in by_id.values()) == 34
    stopped = by_id["gsm8k_mini-1"], by_id["gsm8k_mini-2"]
    assert all((r.reward, r.correct) == (None, None) for r in stopped)  # no score, not wrong
    assert engine.progress.run.errors == {"timeout": 1, "runner_error": 1}
    # Neither says anything of the model: out of the accuracy, not wrong answers in it.
    assert (summary.scored, summary.unscored, summary.accuracy.value) == (34, 2, 1.0)
    assert summary.complete


async def test_sessions_are_scored_per_turn(
    scorer: RewardScorer, client: AsyncOpenAI, tmp_path: Path
) -> None:
    _, summary = await run(
        KnownAnswers(), scorer, client, tmp_path, dataset="sessions_mini", n_samples=1, ks=(1,)
    )
    played = records(tmp_path)
    assert len(played) == 12
    for record in played:
        assert record.turn_rewards is not None
        *good, last = record.turn_rewards
        assert all(r == 1.0 for r in good) and last == 0.0
        assert record.correct is False
    data = summary.to_dict()
    assert data["quality"]["accuracy"]["value"] == 0.0
    # Every session answers right but its last turn; 3- and 4-turn sessions, 6 of each.
    assert data["quality"]["turn_accuracy"] == [1.0, 1.0, 0.5, 0.0]
    # One challenge each, right after an answer; it is the last turn, unanswered, in 6 of 12.
    assert data["robustness"]["flip_rate"] == 0.5
    assert data["efficiency"]["calls"]["tool_error_rate"] is None


async def test_math_calculator_through_the_proxy_end_to_end(
    scorer: RewardScorer, start_workers: StartWorkers, start_proxy: StartProxy, tmp_path: Path
) -> None:
    workers = await start_workers(2)
    base_url = await start_proxy(workers, record_dir=tmp_path / "recorded")
    items = list(load_dataset("gsm8k_mini", limit=6))
    settings = {"n_samples": 2, "concurrency": 4, "seed": 5}
    config = engine_config(RunConfig.model_validate({"eval": settings}), "mock-model")
    async with AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0) as proxy_client:
        engine = Engine(load_runner("math_calculator"), scorer, proxy_client, config)
        summary = await engine.run(items, RunDirectory(tmp_path / "run"), total=len(items))
    played = records(tmp_path / "run")
    assert len(played) == 12 and all(r.error is None for r in played)
    assert all(r.completion_tokens > 0 and r.trajectory["final_output"] for r in played)
    data = summary.to_dict()
    assert data["quality"]["accuracy"]["n"] == 12
    assert data["efficiency"]["calls"]["model_calls_per_attempt"] == 1.0
    recorded = tmp_path / "recorded" / "gsm8k_mini-1-1.jsonl"
    await eventually(recorded.exists)
    request = json.loads(recorded.read_text().splitlines()[0])["request"]
    assert request["seed"] == attempt_seed(5, "gsm8k_mini-1", 1)
    by_worker = [w.stats.generation_requests for w in workers]
    assert sum(by_worker) == 12 and min(by_worker) > 0


class Raising:
    """Answers "raise" on one sample, which the test reward raises on, and "true" elsewhere."""

    async def run(self, sample: Any, ctx: RunContext) -> Trajectory:
        return Trajectory(final_output="raise" if sample.id == "gsm8k_mini-1" else "true")


async def test_a_reward_that_raises_leaves_its_attempt_unscored_not_wrong(
    client: AsyncOpenAI, tmp_path: Path
) -> None:
    async with RewardScorer("tests.test_rewards:mixed_reward", max_workers=1) as scorer:
        settings = {"n_samples": 1, "replays": 1, "max_unscored": 1.0}
        _, summary = await run(Raising(), scorer, client, tmp_path, **settings)
    by_id = {r.sample_id: r for r in records(tmp_path)}
    failed = by_id["gsm8k_mini-1"]
    assert failed.error is not None and failed.error["kind"] == "scorer_error"
    assert failed.error["class"] == "infra" and "broken reward" in failed.error["message"]
    assert not failed.scored
    assert (summary.unscored, summary.scored, summary.accuracy.value) == (1, 35, 1.0)


async def test_the_gate_bounds_the_tasks_and_a_new_limit_holds_from_then_on(
    scorer: RewardScorer, client: AsyncOpenAI, tmp_path: Path
) -> None:
    runner = KnownAnswers(delay=0.01)
    most_tasks = 0
    grown = False

    def watch(progress: Progress) -> None:
        nonlocal most_tasks, grown
        most_tasks = max(most_tasks, len(asyncio.all_tasks()))
        if progress.done == 20 and not grown:
            grown = True
            runner.most_in_flight = 0
            assert progress.gate is not None
            progress.gate.resize(7)

    items = list(load_dataset("gsm8k_mini"))
    config = engine_config(
        RunConfig.model_validate({"eval": {"n_samples": 4, "concurrency": 2}}), "m"
    )
    engine = Engine(runner, scorer, client, config, on_progress=watch)
    before = len(asyncio.all_tasks())
    await engine.run(items, RunDirectory(tmp_path), total=len(items))
    assert len(records(tmp_path)) == 144
    assert runner.most_in_flight == 7  # the new limit, reached and never passed
    # One task per attempt in flight (and per record being written), none per pending one.
    assert most_tasks - before <= 7 + 7
