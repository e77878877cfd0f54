"""The view's compare route: two runs paired, the attempts that flipped, and runs it refuses."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from agent_eval.report.runs import Run
from agent_eval.view import compare as compare_module
from agent_eval.view.compare import comparison
from agent_eval.view.server import create_app
from tests.helpers.view_runs import append, get_json, record, write_run

Client = TestClient[Any, Any]


# B fixes s1#1 and breaks s2#0; s3#0 is wrong in both, s4 only B tried.
BEFORE = [
    record("s1", 0, True, "48"),
    record("s1", 1, False, "19"),
    record("s2", 0, True, "7"),
    record("s3", 0, False, "1"),
]
AFTER = [
    record("s1", 0, True, "48"),
    record("s1", 1, True, "48"),
    record("s2", 0, False, "8"),
    record("s3", 0, False, "2"),
    record("s4", 0, True, "3"),
]


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    root = tmp_path / "runs"
    write_run(root / "before", BEFORE)
    write_run(root / "after", AFTER)
    write_run(root / "other", [record("x1", 0, True), record("x2", 0, False)])
    write_run(root / "empty", [], finished=False)
    (root / "watch").mkdir()
    (root / "watch" / "decisions.jsonl").write_text("")
    async with TestClient(TestServer(create_app([root]))) as test_client:
        yield test_client


async def test_the_flipped_attempts_with_each_sides_answer(client: Client) -> None:
    body = await get_json(client, "/api/compare?a=runs/before&b=runs/after")
    assert body["ids"] == {"a": "runs/before", "b": "runs/after"}
    right, wrong = {"answer": "7", "reward": 1.0}, {"answer": "8", "reward": 0.0}
    assert body["a_only"] == [{"sample_id": "s2", "attempt": 0, "a": right, "b": wrong}]
    fixed = {"a": {"answer": "19", "reward": 0.0}, "b": {"answer": "48", "reward": 1.0}}
    assert body["b_only"] == [{"sample_id": "s1", "attempt": 1, **fixed}]
    assert body["paired"] is True
    assert (body["pairs"], body["shared_samples"], body["unmatched"]) == (4, 3, 1)
    assert body["left_out_unscored"] == 0
    assert body["method"]["accuracy"] == f"McNemar p={body['mcnemar_p']:.3g}"
    assert body["mcnemar_p"] == 1.0  # one flip each way is no evidence either way


async def test_metric_rows_are_b_minus_a_with_the_reports_cells(client: Client) -> None:
    body = await get_json(client, "/api/compare?a=runs/before&b=runs/after")
    accuracy = body["metrics"][0]
    assert (accuracy["metric"], accuracy["a"], accuracy["b"]) == ("accuracy", 0.5, 0.6)
    assert accuracy["value"] == pytest.approx(0.1)
    assert accuracy["low"] < 0.1 < accuracy["high"]
    assert accuracy["cells"][:4] == ["accuracy", "0.500", "0.600", "+0.100"]
    assert accuracy["better"] is None  # within the noise
    paired = [(row["cells"][0], row["method"]) for row in body["paired_metrics"]]
    assert paired == [("accuracy", body["method"]["accuracy"]), ("mean reward", "bootstrap")]
    mixed = "the runs cover different samples (3 shared): differences mix model and data"
    assert body["notes"][0] == mixed


async def test_runs_sharing_no_attempt_are_compared_unpaired(client: Client) -> None:
    body = await get_json(client, "/api/compare?a=runs/before&b=runs/other")
    assert body["paired"] is False
    assert body["mcnemar_p"] is None
    assert (body["pairs"], body["shared_samples"], body["unmatched"]) == (0, 0, 6)
    assert (body["a_only"], body["b_only"]) == ([], [])
    assert body["method"] == {"accuracy": "unpaired: Newcombe", "reward": "unpaired: Welch"}


async def test_an_unknown_run_is_a_404_naming_it(client: Client) -> None:
    body = await get_json(client, "/api/compare?a=runs/before&b=runs/absent", 404)
    assert "'runs/absent'" in body["error"]
    body = await get_json(client, "/api/compare?a=runs/watch&b=runs/before", 404)
    assert "'runs/watch'" in body["error"]


@pytest.mark.parametrize(
    ("query", "named"), [("a=runs/before", "'b'"), ("b=runs/before", "'a'"), ("a=&b=x", "'a'")]
)
async def test_a_missing_parameter_is_a_400_naming_it(
    client: Client, query: str, named: str
) -> None:
    body = await get_json(client, "/api/compare?" + query, 400)
    assert f"missing parameter {named}" in body["error"]


async def test_an_unknown_parameter_is_a_400(client: Client) -> None:
    body = await get_json(client, "/api/compare?a=runs/before&b=runs/after&c=1", 400)
    assert "unknown parameter 'c'" in body["error"]


async def test_a_run_with_no_attempts_cannot_be_compared(client: Client) -> None:
    body = await get_json(client, "/api/compare?a=runs/empty&b=runs/before", 409)
    assert "cannot compare 'runs/empty'" in body["error"]
    assert "holds no attempts yet" in body["error"]


async def test_a_run_written_to_since_is_paired_again(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[tuple[str, str]] = []

    def counted(ids: tuple[str, str], a: Run, b: Run) -> dict[str, Any]:
        made.append(ids)
        return comparison(ids, a, b)

    monkeypatch.setattr(compare_module, "comparison", counted)
    first = await get_json(client, "/api/compare?a=runs/before&b=runs/after")
    assert first == await get_json(client, "/api/compare?a=runs/before&b=runs/after")
    assert len(made) == 1  # unchanged runs: the answer kept is given again
    assert first["unmatched"] == 1
    append(tmp_path / "runs" / "before", [record("s4", 0, False, "4")])
    again = await get_json(client, "/api/compare?a=runs/before&b=runs/after")
    assert again["unmatched"] == 0
    assert [flip["sample_id"] for flip in again["b_only"]] == ["s1", "s4"]
    assert len(made) == 2
