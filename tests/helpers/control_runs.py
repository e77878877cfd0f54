"""A run over a mock worker driven through `agent-eval run` and `agent-eval ctl`: its status,
and its records with timings masked, to compare runs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, cast

from agent_eval.run.config import RunConfig
from agent_eval.run.control.channel import ask
from agent_eval.run.control.protocol import SOCKET, Request, RunState
from agent_eval.run.engine import Engine
from agent_eval.run.parts import engine_config
from agent_eval.testing.mock_worker import MockWorker
from tests.helpers.cli_runs import ROWS, agent_eval, finish, lines, summary, write_dataset
from tests.helpers.golden_runs import masked
from tests.helpers.waits import eventually

ATTEMPTS = ROWS * 2
NO_REPLAYS = ("proxy.retry.max_retries=0", "eval.replays=0", "eval.max_unscored=1")
"""An errored attempt stays errored (a 422 is not retried either), for requeue to play again."""


class Run:
    """A run over one two-step mock worker, two attempts at a time, and its `ctl`."""

    def __init__(self, worker: MockWorker, tmp_path: Path, name: str, *given: str) -> None:
        """`given`: arguments every `run` of it takes (`--processes 2`)."""
        self.worker, self.cwd, self.dir = worker, tmp_path, tmp_path / name
        self.data = write_dataset(tmp_path / "say.jsonl")
        self.given = given

    def args(self, *extra: str) -> tuple[str, ...]:
        common = ("--dataset", str(self.data), "--endpoint", self.worker.url, "-n", "2", "-j", "2")
        return ("run", *common, "--seed", "7", "-o", str(self.dir), *self.given, *extra)

    async def start(self, *extra: str) -> asyncio.subprocess.Process:
        """The run started; returns once it takes control requests."""
        process = await agent_eval(*self.args(*extra), cwd=self.cwd)
        await eventually(lambda: (self.dir / SOCKET).exists(), 120, lambda: f"no {SOCKET}")
        return process

    async def ctl(self, *args: str) -> tuple[int, str, str]:
        """`agent-eval ctl RUN ARGS`: its exit code, stdout and stderr."""
        return await finish(await agent_eval("ctl", str(self.dir), *args, cwd=self.cwd))

    async def pause_holding(self, held: int, timeout: float = 10.0) -> None:
        """Once `held` attempts wait on the worker (`hang`), pause: ctl says they finish."""
        await self.worker.gate.wait_for_arrivals(held, timeout)
        code, out, err = await self.ctl("pause")
        assert code == 0, err
        assert out.startswith(f"paused: no attempt starts; {held} in flight finish"), out

    async def let_finish(self, done: int) -> RunState:
        """Let the held attempts go: the run, paused, has `done` attempts done and starts none
        after them, though slots are free; its state then."""
        self.worker.behavior.hang = False
        self.worker.gate.release()
        state = await self.until(lambda s: s.done == done and s.in_flight == 0)
        served = self.worker.state.stats.generation_requests
        await asyncio.sleep(1)
        assert self.worker.state.stats.generation_requests == served
        assert (await self.state()).done == done
        return state

    async def state(self) -> RunState:
        reply = await ask(self.dir, Request(action="status"))
        assert reply.ok and reply.state is not None, reply
        return reply.state

    async def until(self, condition: Any, timeout: float = 60) -> RunState:
        """Poll the run's status until `condition(state)` holds; that state."""
        last: list[RunState] = []

        async def check() -> bool:
            last[:] = [await self.state()]
            return bool(condition(last[0]))

        await eventually(check, timeout, lambda: f"last status: {last}")
        return last[0]


def results(run_dir: Path) -> list[dict[str, Any]]:
    """A run's records with their timings (and the mock's response ids, a counter) masked, in
    (sample, attempt) order."""
    records = [_without_response_ids(masked(record)) for record in lines(run_dir)]
    return sorted(records, key=lambda r: (r["sample_id"], r["attempt"]))


def _without_response_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_response_ids(v) for k, v in value.items() if k != "response_id"}
    if isinstance(value, list):
        return [_without_response_ids(item) for item in value]
    return value


def idle_engine() -> Engine:
    """An engine that plays nothing: what control acts on, without a model."""
    config = engine_config(RunConfig.model_validate({"eval": {"concurrency": 3}}), "m")
    return Engine(cast(Any, None), cast(Any, None), cast(Any, None), config)


def played_again_once(run_dir: Path, errored: set[tuple[str, int]]) -> None:
    """Every attempt is there once and none errored: the `errored` ones, set aside in
    unscored.jsonl, played again exactly once; the summary is of a whole run."""
    final = lines(run_dir)
    pairs = [(r["sample_id"], r["attempt"]) for r in final]
    assert len(pairs) == len(set(pairs)) == ATTEMPTS
    assert all(r["error"] is None for r in final)
    aside = [json.loads(line) for line in (run_dir / "unscored.jsonl").read_text().splitlines()]
    assert sorted((r["sample_id"], r["attempt"]) for r in aside) == sorted(errored)
    figures = summary(run_dir)
    assert figures["complete"] is True and figures["attempts"] == ATTEMPTS
    assert (figures["unscored"], figures["unscored_by_kind"]) == (0, {})
