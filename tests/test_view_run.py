"""The run page's API: headline by dimension, errors, workers, and the report's plots as SVG."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from agent_eval.failures import failure_class
from agent_eval.metrics import Summary
from agent_eval.report.runs import load_run
from agent_eval.report.table import summary_sections
from tests.helpers.view_runs import append, get_json, record, write_run, write_summary

HOSTILE = "<script>&'</script>"  # short enough for the heatmap's labels
SVG = "{http://www.w3.org/2000/svg}"
W0, W1 = "http://127.0.0.1:30001", "http://127.0.0.1:30002"


def attempt(
    sample: str, n: int, correct: bool, error: str | None = None, session: bool = False
) -> dict[str, Any]:
    """An attempt on workers W0 then W1; with `session`, two turns, the second a challenge."""
    line = record(sample, n, correct)
    for call, worker in zip(line["trajectory"]["model_calls"], (W0, W1), strict=True):
        call["worker"] = worker
    if error:
        line["error"] = {"kind": error, "class": failure_class(error), "message": "slow"}
    if session:
        line["turn_rewards"] = [1.0, float(correct)]
        line["turn_answers"] = ["48", line["answer"]]
        line["challenge_turns"] = [1]
    return line


RECORDS = [
    attempt("s1", 0, True),
    attempt("s1", 1, False),
    attempt("s2", 0, False, error="timeout"),
    attempt("s3", 0, False, error="max_turns"),
]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    write_run(runs / "done", RECORDS, finished=False)
    write_summary(runs / "done")
    workers = [
        {"url": W0, "served": 7, "failures": 1, "healthy": True, "breaker": "closed"},
        {"url": "http://127.0.0.1:30003", "served": 0, "healthy": False, "breaker": "open"},
    ]
    (runs / "done" / "workers.json").write_text(json.dumps({"workers": workers}))
    write_run(runs / "live", RECORDS[:2], finished=False)
    write_run(
        runs / "sessions",
        [attempt(HOSTILE, 0, True, session=True), attempt("s2", 0, False, session=True)],
    )
    write_run(runs / "empty", [], finished=False)
    return runs


def rows(headline: dict[str, Any], dimension: str) -> dict[str, str]:
    (found,) = [s for s in headline["sections"] if s["dimension"] == dimension]
    return dict(found["rows"])


async def test_a_finished_runs_headline_is_its_summary_json(client: TestClient[Any, Any]) -> None:
    body = await get_json(client, "/api/runs/runs/done/headline")
    assert body["source"] == "summary.json"
    assert [s["dimension"] for s in body["sections"]] == ["quality", "stability", "efficiency"]
    quality = rows(body, "quality")
    assert quality["accuracy"].startswith("0.333 ± ")  # max_turns is scored, timeout is not
    assert quality["mean reward"] == "0.333"
    assert "pass@1" in quality and "pass^1" in rows(body, "stability")
    efficiency = rows(body, "efficiency")
    assert "attempts/s" in efficiency  # the wall time only summary.json holds
    assert efficiency["latency p50 / p90 / p99 (s)"] == "3.50 / 3.50 / 3.50"
    assert body["caption"].startswith("samples 2 · attempts 4 · 3 scored")


async def test_a_running_runs_headline_is_rebuilt_from_its_attempts(
    client: TestClient[Any, Any], root: Path
) -> None:
    body = await get_json(client, "/api/runs/runs/live/headline")
    assert body["source"] == "samples.jsonl"
    assert rows(body, "quality")["accuracy"].startswith("0.500 ± ")
    assert "attempts/s" not in rows(body, "efficiency")
    assert any("did not finish" in note for note in body["notes"])
    append(root / "live", [attempt("s2", 0, True), attempt("s3", 0, True)])
    body = await get_json(client, "/api/runs/runs/live/headline")
    assert rows(body, "quality")["accuracy"].startswith("0.750 ± ")


def test_summary_json_reads_back_as_the_summary_it_was(root: Path) -> None:
    written = load_run(root / "done").summary
    found = Summary.read(json.loads(json.dumps(written.to_dict())))
    assert found is not None
    assert summary_sections(found) == summary_sections(written)
    assert Summary.read({"attempts": 4, "quality": {"accuracy": {"value": 0.5}}}) is None


async def test_errors_say_whose_failure_they_are(client: TestClient[Any, Any]) -> None:
    body = await get_json(client, "/api/runs/runs/done/errors")
    assert body["errors"] == [
        {"kind": "timeout", "count": 1, "class": "infra"},
        {"kind": "max_turns", "count": 1, "class": "model"},
    ]


async def test_workers_join_the_index_with_workers_json(client: TestClient[Any, Any]) -> None:
    body = await get_json(client, "/api/runs/runs/done/workers")
    by_name = {row["worker"]: row for row in body["workers"]}
    assert list(by_name) == [W0, W1, "http://127.0.0.1:30003"]
    assert by_name[W0] == {
        "worker": W0,
        "attempts": 4,
        "served": 7,
        "failures": 1,
        "healthy": True,
        "breaker": "closed",
    }
    assert by_name[W1]["served"] is None  # called, but not in the proxy's snapshot
    assert by_name["http://127.0.0.1:30003"]["attempts"] == 0
    assert body["note"] is None
    live = await get_json(client, "/api/runs/runs/live/workers")
    assert "workers.json is missing" in live["note"]


async def test_each_listed_figure_is_an_svg_image(client: TestClient[Any, Any]) -> None:
    listed = (await get_json(client, "/api/runs/runs/done/figures"))["figures"]
    names = ["accuracy", "latency", "prompt-tokens", "completion-tokens", "workers"]
    assert [figure["name"] for figure in listed] == names
    assert listed[1]["caption"].startswith("Latency per attempt: p50 3.50 s")
    for figure in listed:
        response = await client.get(f"/api/runs/runs/done/figures/{figure['name']}.svg")
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("image/svg+xml")
        assert ET.fromstring(await response.text()).tag == f"{SVG}svg"


async def test_sample_ids_in_a_figure_stay_text(client: TestClient[Any, Any]) -> None:
    listed = (await get_json(client, "/api/runs/runs/sessions/figures"))["figures"]
    assert "turn-rewards" in [figure["name"] for figure in listed]
    response = await client.get("/api/runs/runs/sessions/figures/turn-rewards.svg")
    tree = ET.fromstring(await response.text())
    assert not tree.findall(f".//{SVG}script") and not tree.findall(".//script")
    labels = [text.text for text in tree.iter(f"{SVG}text")]
    assert f"{HOSTILE}-0" in labels


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("/api/runs/runs/done/figures/nope.svg", "figure 'nope'"),
        ("/api/runs/runs/live/figures/workers.svg", "figure 'workers'"),  # no workers.json
        ("/api/runs/runs/empty/figures/latency.svg", "holds no attempts yet"),
        ("/api/runs/runs/absent/figures/latency.svg", "run 'runs/absent'"),
    ],
)
async def test_an_unknown_figure_is_not_found(
    client: TestClient[Any, Any], url: str, named: str
) -> None:
    body = await get_json(client, url, 404)
    assert named in body["error"]


async def test_a_run_without_attempts_says_so(client: TestClient[Any, Any]) -> None:
    headline = await get_json(client, "/api/runs/runs/empty/headline")
    assert headline["sections"] == [] and "no attempts yet" in headline["notes"][0]
    figures = await get_json(client, "/api/runs/runs/empty/figures")
    assert figures["figures"] == [] and "no attempts yet" in figures["note"]
    assert (await get_json(client, "/api/runs/runs/empty/workers"))["workers"] == []
