"""The view's API over a watch directory: checkpoints in step order, each with its step's runs."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from agent_eval.metrics import accuracy
from tests.helpers.view_runs import append, get_json, record, write_run
from tests.helpers.watches import Score, age, bounded_steps, three_steps, written


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


async def test_a_bounded_watch_gives_verdicts_and_its_forecast(
    client: TestClient[Any, Any], root: Path
) -> None:
    entries = bounded_steps(root / "bounded")
    body = await get_json(client, "/api/runs/runs/bounded/watch")
    first, second, *_, last = body["checkpoints"]
    assert (first["probe"]["value"], first["probe_run"], first["against"]) == (None, None, None)
    verdict = entries[1]["comparisons"]["reference"]
    assert second["against"] == (
        f"better {verdict['difference']:+.3f} [{verdict['low']:.2f}, {verdict['high']:.2f}], "
        f"{verdict['pairs']} pairs"
    )
    assert second["probe_run"] == "runs/bounded/step-200/probe"
    assert (first["forecast"], second["forecast"]) == (None, None)
    assert last["forecast"] == entries[-1]["forecast"]
    assert last["forecast"]["steps"] == [400 + 10 * k for k in range(1, 11)]


async def test_a_verdict_of_the_final_look_says_so(
    client: TestClient[Any, Any], root: Path
) -> None:
    """A check that played to its horizon decided on the fixed-sample look: its cell names it."""
    bounded_steps(root / "bounded")
    path = root / "bounded" / "decisions.jsonl"
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    entries[1]["comparisons"]["reference"]["final"] = True
    path.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
    body = await get_json(client, "/api/runs/runs/bounded/watch")
    against = [checkpoint["against"] for checkpoint in body["checkpoints"][1:3]]
    assert against[0].endswith(" pairs, final look") and against[1].endswith(" pairs")
