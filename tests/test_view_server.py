"""The view's web app: runs listed, rows filtered, attempts and records read, paths kept inside."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from typer.testing import CliRunner

from agent_eval.cli import app
from agent_eval.metrics import summarize
from agent_eval.results.files import RunDirectory
from agent_eval.results.summary import summary_json
from agent_eval.view.server import create_app
from tests.helpers.run_files import valid_record, valid_summary
from tests.helpers.view_runs import get_json

# One line of a real run's samples.jsonl, its trajectory trimmed.
TEMPLATE: dict[str, Any] = {
    "schema": 2,
    "sample_id": "word_problems-1",
    "attempt": 0,
    "seed": 1,
    "session_id": "word_problems-1-0",
    "reward": 0.0,
    "correct": False,
    "answer": "19",
    "turn_rewards": None,
    "turn_answers": None,
    "challenge_turns": None,
    "latency_s": 14.2,
    "prompt_tokens": 504,
    "completion_tokens": 18,
    "model_calls": 1,
    "tool_calls": 1,
    "tool_errors": 0,
    "error": None,
    "trajectory": {
        "final_output": "19.0",
        "messages": [
            {"content": "A crate holds 16 bottles. How many in 3 crates?", "role": "user"},
            {"arguments": '{"a": 16, "b": 3}', "call_id": "c1", "name": "add"},
            {"call_id": "c1", "output": "19.0", "type": "function_call_output"},
        ],
        "tool_calls": [{"name": "add", "arguments": '{"a": 16, "b": 3}', "result": "19.0"}],
        "model_calls": [
            {"latency_s": 14.1, "prompt_tokens": 504, "completion_tokens": 18, "worker": "w1"}
        ],
        "error": None,
    },
}


def record(sample: str, attempt: int, correct: bool, error: str | None = None) -> dict[str, Any]:
    line = copy.deepcopy(TEMPLATE)
    line.update(sample_id=sample, attempt=attempt, correct=correct, reward=float(correct))
    if error:
        line["error"] = {"kind": error, "message": "boom"}
    return line


def write_run(path: Path, records: list[dict[str, Any]], finished: bool = True) -> None:
    """A run directory of these records, each checked against the line's schema; `finished`:
    with the summary.json the engine would write (its rates over 20 s)."""
    path.mkdir(parents=True)
    lines = "".join(json.dumps(valid_record(line)) + "\n" for line in records)
    (path / "samples.jsonl").write_text(lines)
    if finished:
        summary = summarize((record.score() for record in RunDirectory(path).records()), 20.0)
        (path / "summary.json").write_text(json.dumps(valid_summary(summary_json(summary))))


RECORDS = [
    record("s1", 0, True),
    record("s1", 1, False),
    record("s2", 1, False),
    record("s2", 0, True),
    record("s3", 0, False, error="timeout"),
]


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[TestClient[Any, Any]]:
    root = tmp_path / "runs"
    write_run(root / "done", RECORDS)
    write_run(root / "live", RECORDS[:2], finished=False)
    outside = tmp_path / "secret"
    write_run(outside, RECORDS)
    os.symlink(outside, root / "link")
    async with TestClient(TestServer(create_app([root]))) as test_client:
        yield test_client


async def test_runs_are_listed_with_counts_and_status(client: TestClient[Any, Any]) -> None:
    runs = {run["id"]: run for run in (await get_json(client, "/api/runs"))["runs"]}
    assert set(runs) == {"runs/done", "runs/live"}  # the symlink out is not followed
    assert runs["runs/done"]["status"] == "finished"
    assert runs["runs/live"]["status"] == "running"
    live = runs["runs/live"]
    assert (live["attempts"], live["scored"], live["unscored"]) == (2, 2, 0)
    assert live["accuracy"]["value"] == 0.5
    assert live["accuracy"]["low"] < 0.5 < live["accuracy"]["high"]


async def test_filtering_wrong_answers_gives_their_rows(client: TestClient[Any, Any]) -> None:
    page = await get_json(client, "/api/runs/runs/done/rows?outcome=wrong")
    assert page["total"] == 2
    assert [(row["sample_id"], row["attempt"]) for row in page["rows"]] == [("s1", 1), ("s2", 1)]
    page = await get_json(client, "/api/runs/runs/done/rows?outcome=timeout")
    assert [row["sample_id"] for row in page["rows"]] == ["s3"]


async def test_summary_counts_errors_and_workers(client: TestClient[Any, Any]) -> None:
    body = await get_json(client, "/api/runs/runs/done/summary")
    assert body["errors"] == {"timeout": 1}
    assert body["workers"] == {"w1": 5}
    assert body["summary"]["attempts"] == 5


async def test_a_samples_attempts_come_in_attempt_order(client: TestClient[Any, Any]) -> None:
    body = await get_json(client, "/api/runs/runs/done/samples/s2")
    assert [attempt["attempt"] for attempt in body["attempts"]] == [0, 1]
    assert body["attempts"][0]["trajectory"]["tool_calls"][0]["name"] == "add"
    await get_json(client, "/api/runs/runs/done/samples/nope", 404)


async def test_one_record_is_read_whole(client: TestClient[Any, Any]) -> None:
    body = await get_json(client, "/api/runs/runs/done/records/2")
    assert (body["sample_id"], body["attempt"]) == ("s2", 1)
    await get_json(client, "/api/runs/runs/done/records/5", 404)


async def test_a_running_runs_count_grows(client: TestClient[Any, Any], tmp_path: Path) -> None:
    assert (await get_json(client, "/api/runs/runs/live/rows"))["total"] == 2
    with (tmp_path / "runs" / "live" / "samples.jsonl").open("a") as samples:
        samples.write(json.dumps(record("s9", 0, True)) + "\n")
    assert (await get_json(client, "/api/runs/runs/live/rows"))["total"] == 3


@pytest.mark.parametrize(
    "run_id", ["..%2Fsecret", "runs%2F..%2F..%2Fsecret", "%2Fetc", "runs/link", "runs/link/x"]
)
async def test_paths_outside_the_roots_are_not_found(
    client: TestClient[Any, Any], run_id: str
) -> None:
    body = await get_json(client, f"/api/runs/{run_id}/summary", 404)
    assert "error" in body


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("limit=x", "limit"),
        ("sort=bogus", "sort"),
        ("min_latency_s=fast", "min_latency_s"),
        ("colour=red", "colour"),
        ("desc=maybe", "desc"),
    ],
)
async def test_a_bad_parameter_is_named(
    client: TestClient[Any, Any], query: str, parameter: str
) -> None:
    body = await get_json(client, f"/api/runs/runs/done/rows?{query}", 400)
    assert body["parameter"] == parameter


async def test_only_get_is_served(client: TestClient[Any, Any]) -> None:
    assert (await client.post("/api/runs")).status == 405


async def test_the_page_and_its_files_are_served_securely(client: TestClient[Any, Any]) -> None:
    page = await client.get("/")
    assert page.status == 200
    assert page.headers["Content-Security-Policy"] == "default-src 'self'"
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    assert 'src="/static/app.js"' in await page.text()
    for name, kind in (("app.js", "javascript"), ("app.css", "text/css")):
        response = await client.get(f"/static/{name}")
        assert response.status == 200 and kind in response.headers["Content-Type"]
    assert (await client.get("/static/..%2Fserver.py")).status == 404


def test_the_command_names_a_missing_folder(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["view", str(tmp_path / "absent")])
    assert result.exit_code == 2
    assert "no such folder" in result.output
