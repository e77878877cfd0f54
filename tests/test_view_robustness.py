"""Robustness in the view's API: accuracy per perturbation, the samples that break, the
attempts filtered by perturbation, and a sample's links between original and variants."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient

from agent_eval.metrics import summarize, wilson_interval
from agent_eval.results.record import AttemptRecord
from tests.helpers.view_runs import append, get_json, perturbed, record, write_run

ROBUST = "/api/runs/runs/perturbed/robustness"


def estimate(right: int, n: int) -> dict[str, Any]:
    found = wilson_interval(right, n)
    return {
        "value": found.value,
        "stderr": found.stderr,
        "low": found.low,
        "high": found.high,
        "n": n,
    }


NUMBERS = {
    "accuracy": estimate(5, 6),
    "variants": 3,
    "skipped": 1,
    "pairs": 5,
    "broke": 1,
    "fixed": 1,
    "drop": {"value": 0.0, "low": -0.4, "high": 0.4},
    "mcnemar_p": 1.0,
}
WRITTEN = {
    "original_accuracy": estimate(4, 7),
    "robust_accuracy": estimate(2, 6),
    "by_kind": {"numbers": NUMBERS},
    "flip_rate": 0.25,
}
"""A robustness group as summary.json holds it; its figures differ from the attempts' on
purpose (one kind), so that which source was read shows."""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    write_run(runs / "perturbed", perturbed(), finished=False)
    write_run(runs / "written", perturbed())
    summary = json.loads((runs / "written" / "summary.json").read_text())
    (runs / "written" / "summary.json").write_text(json.dumps({**summary, "robustness": WRITTEN}))
    write_run(runs / "plain", [record("s1", 0, True), record("s1", 1, False)])
    write_run(runs / "growing", perturbed()[:8], finished=False)
    return runs


async def test_accuracy_per_kind_is_counted_from_the_attempts(
    client: TestClient[Any, Any],
) -> None:
    body = await get_json(client, ROBUST)
    assert body["source"] == "samples.jsonl"
    assert body["original_accuracy"] == estimate(4, 7)
    # Units whose original and every variant it has are scored at that index: p1/0 p1/1 p2/0
    # p3/0 p3/1 p4/0 (p2/1's distractor and p4/1's original are not); right: p2/0 and p4/0.
    assert body["robust_accuracy"] == estimate(2, 6)
    # The same figure summary.json will hold once the run ends.
    scores = [AttemptRecord.from_line(orjson.dumps(line), "test").score() for line in perturbed()]
    summarized = summarize(scores, 1.0).to_dict()["robustness"]["robust_accuracy"]
    assert (summarized["value"], summarized["n"]) == (2 / 6, 6)
    assert body["flip_rate"] is None
    assert body["kinds"] == [
        # summary.json's figures for numbers, less the drop's interval (no bootstrap live).
        {"kind": "numbers", **NUMBERS, "drop": {"value": 0.0, "low": None, "high": None}},
        {
            "kind": "distractor",
            "accuracy": estimate(2, 5),
            "variants": 3,
            "skipped": 1,
            "pairs": 5,
            "broke": 2,
            "fixed": 1,
            "drop": {"value": pytest.approx(0.2), "low": None, "high": None},
            "mcnemar_p": 1.0,
        },
    ]


async def test_the_broken_pairs_are_listed_side_by_side(client: TestClient[Any, Any]) -> None:
    broken = (await get_json(client, ROBUST))["broken"]
    assert (broken["total"], broken["offset"]) == (3, 0)
    pairs = [
        (p["kind"], p["attempt"], p["original"]["sample_id"], p["variant"]["sample_id"])
        for p in broken["pairs"]
    ]
    assert pairs == [
        ("numbers", 0, "p1", "p1~numbers"),
        ("distractor", 0, "p1", "p1~distractor"),
        ("distractor", 1, "p1", "p1~distractor"),
    ]
    first = broken["pairs"][0]
    assert first["original"] == {
        "sample_id": "p1",
        "index": 0,
        "question": "A crate holds 16 bottles. How many in 3 crates?",
        "answer": "48",
    }
    assert (first["variant"]["index"], first["variant"]["answer"]) == (8, "19")


async def test_the_broken_pairs_are_paged(client: TestClient[Any, Any]) -> None:
    page = (await get_json(client, ROBUST + "?offset=1&limit=1"))["broken"]
    assert (page["total"], page["offset"]) == (3, 1)
    assert [(p["kind"], p["attempt"]) for p in page["pairs"]] == [("distractor", 0)]
    bad = await get_json(client, ROBUST + "?limit=0", 400)
    assert bad["parameter"] == "limit"
    bad = await get_json(client, ROBUST + "?kind=numbers", 400)
    assert bad["parameter"] == "kind"


async def test_a_summarys_robustness_group_is_read_when_present(
    client: TestClient[Any, Any],
) -> None:
    body = await get_json(client, "/api/runs/runs/written/robustness")
    assert body["source"] == "summary.json"
    assert (body["original_accuracy"], body["robust_accuracy"]) == (estimate(4, 7), estimate(2, 6))
    assert body["flip_rate"] == 0.25
    assert body["kinds"] == [{"kind": "numbers", **NUMBERS}]
    assert body["broken"]["total"] == 3  # only the attempts list them


async def test_a_run_without_variants_has_no_kinds(client: TestClient[Any, Any]) -> None:
    body = await get_json(client, "/api/runs/runs/plain/robustness")
    assert body["kinds"] == [] and body["broken"] == {"total": 0, "offset": 0, "pairs": []}
    assert body["original_accuracy"] == estimate(1, 2)
    assert body["robust_accuracy"]["n"] == 0 and body["robust_accuracy"]["value"] is None
    summary = await get_json(client, "/api/runs/runs/plain/summary")
    assert summary["perturbations"] == []
    rows = (await get_json(client, "/api/runs/runs/plain/rows"))["rows"]
    assert {(r["variant_of"], r["perturbation"]) for r in rows} == {(None, None)}


async def test_rows_name_their_original_and_perturbation(client: TestClient[Any, Any]) -> None:
    summary = await get_json(client, "/api/runs/runs/perturbed/summary")
    assert summary["perturbations"] == ["numbers", "distractor"]
    rows = (await get_json(client, "/api/runs/runs/perturbed/rows?limit=100"))["rows"]
    named = [(r["sample_id"], r["variant_of"], r["perturbation"]) for r in rows]
    assert named[7] == ("p4", None, None)
    assert named[8] == ("p1~numbers", "p1", "numbers")
    assert named[19] == ("p3~distractor", "p3", "distractor")


@pytest.mark.parametrize(
    ("perturbation", "samples"),
    [
        ("original", ["p1", "p1", "p2", "p2", "p3", "p3", "p4", "p4"]),
        ("numbers", ["p1~numbers"] * 2 + ["p2~numbers"] * 2 + ["p4~numbers"] * 2),
        ("distractor", ["p1~distractor"] * 2 + ["p2~distractor"] * 2 + ["p3~distractor"] * 2),
    ],
)
async def test_the_attempts_filter_by_perturbation(
    client: TestClient[Any, Any], perturbation: str, samples: list[str]
) -> None:
    url = f"/api/runs/runs/perturbed/rows?limit=100&perturbation={perturbation}"
    body = await get_json(client, url)
    assert [row["sample_id"] for row in body["rows"]] == samples
    assert body["total"] == len(samples)
    wrong = await get_json(client, url + "&outcome=wrong")
    assert wrong["total"] == {"original": 3, "numbers": 1, "distractor": 3}[perturbation]


@pytest.mark.parametrize("perturbation", ["names", "Numbers", "p1"])
async def test_an_unknown_perturbation_is_refused(
    client: TestClient[Any, Any], perturbation: str
) -> None:
    body = await get_json(client, f"/api/runs/runs/perturbed/rows?perturbation={perturbation}", 400)
    assert body["parameter"] == "perturbation"
    assert body["error"] == (
        f"perturbation: no {perturbation!r} variants here; use original, numbers, distractor"
    )
    sessions = f"/api/runs/runs/perturbed/sessions?perturbation={perturbation}"
    assert (await get_json(client, sessions, 400))["parameter"] == "perturbation"


async def test_an_original_lists_its_variants(client: TestClient[Any, Any]) -> None:
    body = await get_json(client, "/api/runs/runs/perturbed/samples/p2")
    assert (body["variant_of"], body["perturbation"]) == (None, None)
    assert body["variants"] == [
        {
            "sample_id": "p2~numbers",
            "perturbation": "numbers",
            "attempts": [
                {"attempt": 0, "correct": True, "unscored": False},
                {"attempt": 1, "correct": True, "unscored": False},
            ],
        },
        {
            "sample_id": "p2~distractor",
            "perturbation": "distractor",
            "attempts": [
                {"attempt": 0, "correct": True, "unscored": False},
                {"attempt": 1, "correct": None, "unscored": True},
            ],
        },
    ]


async def test_a_variant_names_its_original(client: TestClient[Any, Any]) -> None:
    body = await get_json(client, "/api/runs/runs/perturbed/samples/p3~distractor")
    assert (body["variant_of"], body["perturbation"], body["variants"]) == ("p3", "distractor", [])
    assert [a["answer"] for a in body["attempts"]] == ["48", "19"]


async def test_variants_appended_to_a_running_run_join_its_figures(
    client: TestClient[Any, Any], root: Path
) -> None:
    url = "/api/runs/runs/growing/robustness"
    assert (await get_json(client, url))["kinds"] == []
    append(root / "growing", perturbed()[8:14])
    body = await get_json(client, url)
    assert [(k["kind"], k["pairs"], k["broke"]) for k in body["kinds"]] == [("numbers", 5, 1)]
    assert body["robust_accuracy"] == estimate(3, 5)  # of p1/0 p1/1 p2/0 p2/1 p4/0: 2 wrong
    summary = await get_json(client, "/api/runs/runs/growing/summary")
    assert summary["perturbations"] == ["numbers"]
