"""The view's API over a watch directory: checkpoints in step order, each with its step's runs."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from agent_eval.metrics import accuracy
from agent_eval.metrics.summary import json_ready
from agent_eval.run.config import WatchSection
from agent_eval.trigger.watch import Schedule
from tests.view_runs import append, get_json, record, write_run

Score = tuple[int, int]  # correct, attempts


def result(score: Score) -> dict[str, Any]:
    """A probe's or full evaluation's result as `agent-eval watch` records it."""
    return {"accuracy": json_ready(dataclasses.asdict(accuracy(*score))), "attempts": score[1]}


def schedule(watch: Path) -> Schedule:
    """The watcher's schedule, carried on from trigger.json: a move of 0.1 in the probe fires."""
    watch.mkdir(parents=True, exist_ok=True)
    return Schedule.load(watch, WatchSection(threshold=0.1, alpha=1.0))


def checkpoint(plan: Schedule, step: int, probe: Score, full: Score) -> bool:
    """Probe a step as the watcher does: its probe run, the full run when the trigger fires,
    then the decision's line; True when it fired."""
    step_dir = plan.root / f"step-{step}"
    write_run(step_dir / "probe", [record("s1", 0, True), record("s2", 0, False)])
    fired = plan.trigger.observe(step, probe[0] / probe[1])
    made = plan.trigger.last_decision
    assert made is not None
    entry: dict[str, Any] = {
        "time": time.time(),
        "checkpoint": f"/checkpoints/step-{step}",
        "model": f"step-{step}",
        "probe": result(probe),
        **dataclasses.asdict(made),
    }
    if fired:
        write_run(step_dir / "full", [record(f"s{i}", 0, i % 2 == 0) for i in range(5)])
        entry["full"] = result(full)
    plan.last_step = step
    plan.record(entry)
    return fired


def three_steps(watch: Path) -> None:
    """Step 100 fires (first), 200 fires (the probe moved 0.4), 300 does not (it stayed)."""
    plan = schedule(watch)
    fired = [
        checkpoint(plan, 100, (5, 10), (12, 20)),
        checkpoint(plan, 200, (9, 10), (16, 20)),
        checkpoint(plan, 300, (9, 10), (0, 20)),
    ]
    assert fired == [True, True, False]


def age(*paths: Path) -> None:
    """Make files look long untouched: nothing written to them for a minute."""
    past = time.time() - 60
    for path in paths:
        os.utime(path, (past, past))


def written(watch: Path) -> list[Path]:
    """What a watch writes as it goes: its decisions and its step runs' samples."""
    return [watch / "decisions.jsonl", *watch.glob("step-*/*/samples.jsonl")]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    three_steps(runs / "watch")
    return runs


def interval(score: Score) -> dict[str, float]:
    found = accuracy(*score)
    return {"value": found.value, "low": found.low, "high": found.high}


async def test_checkpoints_come_with_their_steps_runs(client: TestClient[Any, Any]) -> None:
    body = await get_json(client, "/api/runs/runs/watch/watch")
    assert (body["id"], body["status"]) == ("runs/watch", "running")
    shown = [
        (c["step"], c["reason"], c["decision"], c["probe_run"], c["full_run"])
        for c in body["checkpoints"]
    ]
    assert shown == [
        (100, "first", "first", "runs/watch/step-100/probe", "runs/watch/step-100/full"),
        (200, "change", "change", "runs/watch/step-200/probe", "runs/watch/step-200/full"),
        (300, "none", "none (none)", "runs/watch/step-300/probe", None),
    ]
    first, second, third = body["checkpoints"]
    assert (first["probe"], first["full"]) == (interval((5, 10)), interval((12, 20)))
    assert (second["probe"], second["full"]) == (interval((9, 10)), interval((16, 20)))
    assert (third["probe"], third["full"]) == (interval((9, 10)), None)
    assert first["change"] is None
    assert second["change"] == pytest.approx(0.4)
    assert third["change"] == pytest.approx(0.0)


async def test_a_long_quiet_watch_is_finished(client: TestClient[Any, Any], root: Path) -> None:
    age(*written(root / "watch"))
    assert (await get_json(client, "/api/runs/runs/watch/watch"))["status"] == "finished"


async def test_a_watch_probing_between_decisions_is_running(
    client: TestClient[Any, Any], root: Path
) -> None:
    # A probe can take longer than the quiet spell: its samples show the watch is alive.
    age(*written(root / "watch"))
    append(root / "watch" / "step-300" / "probe", [record("s9", 0, True)])
    assert (await get_json(client, "/api/runs/runs/watch/watch"))["status"] == "running"


async def test_a_step_run_linked_from_outside_gets_no_id(
    client: TestClient[Any, Any], root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "secret"
    write_run(outside, [record("s1", 0, True)])
    os.symlink(outside, root / "watch" / "step-300" / "full")
    body = await get_json(client, "/api/runs/runs/watch/watch")
    assert body["checkpoints"][2]["full_run"] is None


@pytest.mark.parametrize(
    ("run_id", "said"),
    [
        ("runs/watch/step-100/probe", "is a run, not a watch directory"),
        ("runs/absent", "no watch directory 'runs/absent'"),
        ("runs%2F..%2F..%2Fsecret", "no watch directory"),
    ],
)
async def test_only_a_watch_directory_has_checkpoints(
    client: TestClient[Any, Any], run_id: str, said: str
) -> None:
    body = await get_json(client, f"/api/runs/{run_id}/watch", 404)
    assert said in body["error"]


async def test_a_corrupt_line_is_named(client: TestClient[Any, Any], root: Path) -> None:
    with (root / "watch" / "decisions.jsonl").open("a") as decisions:
        decisions.write('{"step": 400}\n')
    body = await get_json(client, "/api/runs/runs/watch/watch", 409)
    assert "decisions.jsonl line 4 is not a decision" in body["error"]


async def test_a_line_being_written_waits(client: TestClient[Any, Any], root: Path) -> None:
    with (root / "watch" / "decisions.jsonl").open("a") as decisions:
        decisions.write('{"step": 400, "probe": {"accu')
    body = await get_json(client, "/api/runs/runs/watch/watch")
    assert [c["step"] for c in body["checkpoints"]] == [100, 200, 300]
