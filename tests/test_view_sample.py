"""The sample endpoint's question, gold and agreement, and the sessions page of a multi-turn run."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from agent_eval.view.samples import Agreement, agreements
from tests.helpers.view_runs import get_json, write_run
from tests.helpers.view_samples import CRATES, EGGS, answered, session_record, stopped_session

SINGLE = [
    answered("word_problems-1", 0, "48", True),
    answered("word_problems-1", 1, " 48", True),
    answered("word_problems-1", 2, "19", False),
    answered("word_problems-1", 3, None, False),
    answered("not-in-the-set", 0, "7", False),
]
SESSIONS = [
    session_record("eggs", 0, ["84", "168", "168", "148"]),
    session_record("eggs", 1, ["84", "168", "160", "140"]),
    session_record("savings", 0, ["75", "75", "50", "50"]),
]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """Runs on a shipped dataset, on a dataset file since deleted, and of sessions."""
    runs = tmp_path / "runs"
    write_run(runs / "single", SINGLE, finished=False, settings={"dataset.name": "word_problems"})
    gone = tmp_path / "gone.jsonl"
    write_run(runs / "moved", SINGLE[:1], finished=False, settings={"dataset.name": str(gone)})
    write_run(runs / "chat", SESSIONS, finished=False, settings={"agent.name": "multi_turn_chat"})
    down = [SESSIONS[0], stopped_session(1, schema=2), stopped_session(2, schema=1)]
    write_run(runs / "down", down, finished=False, settings={"agent.name": "multi_turn_chat"})
    return runs


async def test_question_and_gold_come_from_the_dataset(client: TestClient[Any, Any]) -> None:
    body = await get_json(client, "/api/runs/runs/single/samples/word_problems-1")
    assert (body["question"], body["gold"], body["gold_note"]) == (CRATES, "48", None)
    assert body["turns"] is None
    assert [attempt["attempt"] for attempt in body["attempts"]] == [0, 1, 2, 3]


async def test_a_sample_the_dataset_lacks_says_so(client: TestClient[Any, Any]) -> None:
    body = await get_json(client, "/api/runs/runs/single/samples/not-in-the-set")
    assert body["gold"] is None
    assert body["gold_note"] == (
        "sample 'not-in-the-set' is not in dataset 'word_problems' as config.yaml names it"
    )
    assert body["question"] == CRATES  # as the attempt was asked it


async def test_an_unreadable_dataset_leaves_gold_null_with_a_note(
    client: TestClient[Any, Any], tmp_path: Path
) -> None:
    body = await get_json(client, "/api/runs/runs/moved/samples/word_problems-1")
    assert body["gold"] is None
    assert body["gold_note"].startswith(f"dataset '{tmp_path / 'gone.jsonl'}' cannot be read now")
    assert body["question"] == CRATES
    # The file back, and config.yaml touched: the dataset is read again.
    row = {"id": "word_problems-1", "question": "Q?", "answer": "#### 5"}
    (tmp_path / "gone.jsonl").write_text(json.dumps(row) + "\n")
    config = tmp_path / "runs" / "moved" / "config.yaml"
    stamp = config.stat().st_mtime_ns + 1_000_000_000
    os.utime(config, ns=(stamp, stamp))
    body = await get_json(client, "/api/runs/runs/moved/samples/word_problems-1")
    assert (body["question"], body["gold"], body["gold_note"]) == ("Q?", "5", None)


async def test_each_attempt_says_how_many_others_agree(client: TestClient[Any, Any]) -> None:
    body = await get_json(client, "/api/runs/runs/single/samples/word_problems-1")
    assert body["agreements"] == [
        {"answered": True, "same": 1, "others": 3, "majority": True, "tied": 0},
        {"answered": True, "same": 1, "others": 3, "majority": True, "tied": 0},  # " 48" is "48"
        {"answered": True, "same": 0, "others": 3, "majority": False, "tied": 0},
        {"answered": False, "same": 0, "others": 3, "majority": False, "tied": 0},
    ]


def test_agreement_uses_the_majority_maj_at_k_votes_for() -> None:
    assert agreements(["A", "b", "B", None]) == [
        Agreement(answered=True, same=0, others=3, majority=False),
        Agreement(answered=True, same=1, others=3, majority=True),
        Agreement(answered=True, same=1, others=3, majority=True),
        Agreement(answered=False, same=0, others=3, majority=False),
    ]
    assert agreements(["7"]) == [Agreement(answered=True, same=0, others=0, majority=True)]


def test_a_tie_for_the_most_votes_is_no_majority() -> None:
    two_each = agreements(["19", "48", "19 ", "48", None])
    assert [(a.majority, a.tied) for a in two_each] == [(False, 2)] * 4 + [(False, 0)]
    three_ways = agreements(["1", "2", "3"])
    assert [(a.same, a.majority, a.tied) for a in three_ways] == [(0, False, 3)] * 3


async def test_a_sessions_gold_is_per_turn(client: TestClient[Any, Any]) -> None:
    body = await get_json(client, "/api/runs/runs/chat/samples/eggs")
    assert body["question"] == EGGS[0][0]
    assert body["gold"] == ["84", "168", "168", "148"]  # the challenge defends the answer before
    assert [(turn["user"], turn["challenge"]) for turn in body["turns"]] == [
        (user, expected is None) for user, expected in EGGS
    ]
    assert [agreement["same"] for agreement in body["agreements"]] == [0, 0]


async def test_the_sessions_page_gives_rewards_per_turn(client: TestClient[Any, Any]) -> None:
    body = await get_json(client, "/api/runs/runs/chat/sessions?sort=sample_id&limit=2")
    assert body["total"] == 3
    rows = [(r["sample_id"], r["attempt"], r["turn_rewards"]) for r in body["rows"]]
    assert rows == [("eggs", 0, [1.0, 1.0, 1.0, 1.0]), ("eggs", 1, [1.0, 1.0, 0.0, 0.0])]
    assert {tuple(r["challenge_turns"]) for r in body["rows"]} == {(2,)}
    body = await get_json(client, "/api/runs/runs/chat/sessions?sort=sample_id&offset=2")
    assert [(r["sample_id"], r["index"]) for r in body["rows"]] == [("savings", 2)]
    body = await get_json(client, "/api/runs/runs/single/sessions?limit=1")
    assert body["rows"][0]["turn_rewards"] is None
    bad = await get_json(client, "/api/runs/runs/chat/sessions?limit=0", 400)
    assert bad["parameter"] == "limit"


async def test_an_unscored_attempt_shows_no_score_whichever_version_wrote_it(
    client: TestClient[Any, Any],
) -> None:
    body = await get_json(client, "/api/runs/runs/down/samples/eggs")
    scores = [(a["reward"], a["correct"], a["turn_rewards"]) for a in body["attempts"]]
    assert scores == [(1.0, True, [1.0, 1.0, 1.0, 1.0]), (None, None, None), (None, None, None)]
    assert [a["turn_answers"][-2] for a in body["attempts"]] == ["168"] * 3  # what was said stays
    rows = (await get_json(client, "/api/runs/runs/down/rows"))["rows"]
    assert [(r["unscored"], r["correct"], r["reward"]) for r in rows] == [
        (False, True, 1.0),
        (True, None, None),
        (True, None, None),
    ]
    # In the heatmap an unscored session is a row of turns without a reward, not of zeros.
    body = await get_json(client, "/api/runs/runs/down/sessions")
    assert [r["turn_rewards"] for r in body["rows"]] == [[1.0] * 4, [None] * 4, [None] * 4]
