"""`agent-eval run` with eval.limits over mock workers: an attempt past a limit ends as
limit_exceeded naming it, scored as the model's failure with its trajectory up to there; under
every limit the records are those of a run without limits."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from agent_eval.testing.mock_worker import MockWorker
from tests.helpers.cli_runs import agent_eval, finish, lines, summary, write_dataset
from tests.helpers.proxy import StartWorkers, worker_starter

ATTEMPTS = 2
"""Samples of each run, played at once: each attempt is held to its own limits."""
PRICES = ("eval.prices.mock-model.prompt=1000000", "eval.prices.mock-model.completion=1000000")
"""A token costs 1: a cost limit reads as a token limit."""


async def _run(
    tmp_path: Path, name: str, workers: list[MockWorker], *settings: str, samples: int = ATTEMPTS
) -> list[dict[str, Any]]:
    """The records of a math_calculator run of `samples` samples, at once, over `workers`."""
    data, run_dir = write_dataset(tmp_path / "say.jsonl"), tmp_path / name
    endpoints = [arg for worker in workers for arg in ("--endpoint", worker.url)]
    process = await agent_eval(
        "run", "--agent", "math_calculator", "--dataset", str(data), *endpoints, "-n", "1",
        "-j", str(samples), f"dataset.limit={samples}", "eval.replays=0", "-o", str(run_dir),
        *settings, cwd=tmp_path,
    )  # fmt: skip
    code, _, err = await finish(process, timeout=240)
    assert code == 0, err
    return sorted(lines(run_dir), key=lambda record: record["sample_id"])


async def _two_step(start_workers: StartWorkers) -> MockWorker:
    """A worker whose every attempt takes two calls: the calculator tool, then the answer."""
    [worker] = await start_workers(1)
    worker.behavior.two_step = True
    return worker


async def _plain(folder: Path) -> list[dict[str, Any]]:
    """The records of a run without limits over a two-step worker of its own."""
    async with AsyncExitStack() as stack:
        return await _run(folder, "plain", [await _two_step(worker_starter(stack))])


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """A run without limits (`_plain`), made once: the tests compare theirs with it."""
    return asyncio.run(_plain(tmp_path_factory.mktemp("plain")))


def _spent(record: dict[str, Any]) -> list[tuple[int, int]]:
    """Each model call's prompt and completion tokens."""
    calls = record["trajectory"]["model_calls"]
    return [(call["prompt_tokens"], call["completion_tokens"]) for call in calls]


def _outcome(record: dict[str, Any]) -> tuple[Any, ...]:
    """What an attempt did and scored; its messages by role (their ids differ run to run)."""
    trajectory, spent = record["trajectory"], _spent(record)
    roles = [message.get("role", message.get("type")) for message in trajectory["messages"]]
    calls = trajectory["tool_calls"]
    return record["answer"], record["reward"], record["error"], roles, calls, spent


def _assert_limited(record: dict[str, Any], limit: str, calls: int) -> None:
    """`record` ended past `limit`, the model's failure, scored wrong, after `calls` calls."""
    error = record["error"]
    assert (error["kind"], error["class"], error["limit"]) == ("limit_exceeded", "model", limit)
    assert f"eval.limits.{limit}" in error["message"], error
    assert (record["reward"], record["correct"]) == (0.0, False)
    assert record["model_calls"] == calls == len(record["trajectory"]["model_calls"])
    # What it did up to there is kept: the question, and each call's answer.
    messages = record["trajectory"]["messages"]
    assert messages[0]["role"] == "user" and "Say" in str(messages[0]["content"])


async def test_under_every_limit_the_records_are_a_plain_runs(
    start_workers: StartWorkers, tmp_path: Path, plain: list[dict[str, Any]]
) -> None:
    worker = await _two_step(start_workers)
    tokens = max(r["prompt_tokens"] + r["completion_tokens"] for r in plain)
    limited = await _run(
        tmp_path, "limited", [worker], "eval.limits.wall_time=120", "eval.limits.working_time=120",
        f"eval.limits.tokens={tokens}", "eval.limits.model_calls=2", f"eval.limits.cost={tokens}",
        *PRICES,
    )  # fmt: skip
    assert [_outcome(r) for r in limited] == [_outcome(r) for r in plain]
    assert all(r["error"] is None and r["model_calls"] == 2 for r in limited)
    assert summary(tmp_path / "limited")["efficiency"]["errors"]["total"] == 0


async def test_the_call_past_model_calls_is_never_sent(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    worker = await _two_step(start_workers)
    records = await _run(tmp_path, "calls", [worker], "eval.limits.model_calls=1")
    for record in records:
        _assert_limited(record, "model_calls", 1)
    assert worker.stats.generation_requests == ATTEMPTS
    errors = summary(tmp_path / "calls")["efficiency"]["errors"]
    assert errors["by_kind"] == {"limit_exceeded": ATTEMPTS}
    assert errors["by_limit"] == {"model_calls": ATTEMPTS}
    process = await agent_eval("report", str(tmp_path / "calls"), cwd=tmp_path)
    code, _, err = await finish(process)
    assert code == 0, err
    report = (tmp_path / "calls" / "report.html").read_text()
    assert f"limit_exceeded {ATTEMPTS} (model_calls {ATTEMPTS})" in report


async def test_tokens_and_cost_stop_the_call_that_would_pass_them(
    start_workers: StartWorkers, tmp_path: Path, plain: list[dict[str, Any]]
) -> None:
    worker = await _two_step(start_workers)
    # The first call's tokens: the second call would pass a limit of them.
    first = min(sum(_spent(r)[0]) for r in plain)
    for limit, settings in (("tokens", ()), ("cost", PRICES)):
        records = await _run(tmp_path, limit, [worker], f"eval.limits.{limit}={first}", *settings)
        for record in records:
            _assert_limited(record, limit, 1)
    assert worker.stats.generation_requests == 2 * ATTEMPTS
    # One token short of the two calls': the second, sent, passes the limit as it ends.
    least = min(sum(map(sum, _spent(r))) for r in plain)
    for record in await _run(tmp_path, "last", [worker], f"eval.limits.tokens={least - 1}"):
        _assert_limited(record, "tokens", 2)


async def test_an_attempt_past_its_wall_time_is_stopped_mid_call(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    worker = await _two_step(start_workers)
    worker.behavior.hang = True  # no call is ever answered: only the limit ends the attempt
    records = await _run(tmp_path, "wall", [worker], "eval.limits.wall_time=1")
    for record in records:
        _assert_limited(record, "wall_time", 0)
    assert worker.stats.generation_requests == ATTEMPTS


async def test_working_time_leaves_out_the_wait_for_a_free_worker(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    busy, free = await start_workers(2)
    busy.behavior.error_status = 429  # every call tries it first, then waits to go to `free`
    wait = ("proxy.policy=round_robin", "proxy.retry.backoff_base=3", "proxy.retry.backoff_max=3")
    # The attempt's one call waits 1.5 to 3 s for `free`, and works a fraction of a second.
    [working] = await _run(
        tmp_path, "working", [busy, free], "eval.limits.working_time=1", *wait, samples=1
    )
    assert working["error"] is None and working["latency_s"] > 1, working
    [walled] = await _run(
        tmp_path, "wall", [busy, free], "eval.limits.wall_time=1", *wait, samples=1
    )
    error = walled["error"]
    assert (error["kind"], error["limit"]) == ("limit_exceeded", "wall_time")
