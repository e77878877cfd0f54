"""The view's run index: columns, filters, sorting, paging, records and a growing file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from agent_eval.errors import ConfigError
from agent_eval.view.index import Filter, RunIndex
from tests.helpers.index_lines import A, B, line

TIMEOUT = {"kind": "timeout", "class": "infra", "message": "slow", "worker": B}
MAX_TURNS = {"kind": "max_turns", "class": "model", "message": "long", "worker": A}
LINES_ASK = [{"type": "input_text", "text": "Count the PEARS"}]
LINES = [
    line("s1", 0, correct=True, answer="12", latency=3.0),
    line("s1", 1, answer="13", workers=(A, B), tools=3, latency=5.0),
    line("s2", 0, error=TIMEOUT, workers=(B,), tokens=(500, 50), latency=9.0),
    line("s2", 1, correct=True, workers=(B,), latency=2.0),
    line("s0", 0, error=MAX_TURNS, ask=LINES_ASK),
]


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    (tmp_path / "samples.jsonl").write_bytes(b"".join(LINES))
    return tmp_path


def ids(index: RunIndex, where: Filter | None = None, **order: Any) -> list[tuple[str, int]]:
    return [(row.attempt.sample_id, row.attempt.attempt) for row in index.rows(where, **order).rows]


def test_columns_of_a_row(run_dir: Path) -> None:
    row = RunIndex(run_dir).rows().rows[2].to_dict()
    assert (row["sample_id"], row["attempt"], row["error_kind"], row["unscored"]) == (
        "s2",
        0,
        "timeout",
        True,
    )
    assert (row["workers"], row["tokens"], row["latency_s"]) == ((B,), 550, 9.0)
    assert (row["correct"], row["reward"]) == (None, None)  # never scored: no verdict, no reward


def test_a_line_that_scored_an_unscored_attempt_reads_as_unscored(tmp_path: Path) -> None:
    """Schema 1 wrote an unscored attempt with a wrong answer's score: it reads as unscored."""
    scored_as_wrong = {"schema": 1, "reward": 0.0, "correct": False}
    old = orjson.loads(line("s2", 0, error=TIMEOUT)) | scored_as_wrong
    written = [LINES[1], orjson.dumps(old, option=orjson.OPT_APPEND_NEWLINE), LINES[0]]
    (tmp_path / "samples.jsonl").write_bytes(b"".join(written))
    index = RunIndex(tmp_path)
    attempts = [row.attempt for row in index.rows().rows]
    rows = [(a.sample_id, not a.scored, a.correct, a.reward) for a in attempts]
    assert rows == [("s1", False, False, 0.0), ("s2", True, None, None), ("s1", False, True, 1.0)]
    assert index.record(1) == orjson.loads(line("s2", 0, error=TIMEOUT)) | {"schema": 1}
    assert (ids(index, Filter(outcome="wrong")), ids(index, Filter(outcome="unscored"))) == (
        [("s1", 1)],
        [("s2", 0)],
    )
    # With no reward, it sorts after every scored attempt, whichever way.
    assert ids(index, sort="reward") == [("s1", 1), ("s1", 0), ("s2", 0)]
    assert ids(index, sort="reward", descending=True) == [("s1", 0), ("s1", 1), ("s2", 0)]


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (Filter(outcome="correct"), [("s1", 0), ("s2", 1)]),
        (Filter(outcome="wrong"), [("s1", 1), ("s0", 0)]),
        (Filter(outcome="unscored"), [("s2", 0)]),
        (Filter(outcome="max_turns"), [("s0", 0)]),
        (Filter(outcome="no_such_kind"), []),
        (Filter(worker=B), [("s1", 1), ("s2", 0), ("s2", 1)]),
        (Filter(outcome="timeout", worker=B), [("s2", 0)]),
        (Filter(outcome="timeout", worker=A), []),
        (Filter(ranges={"tool_calls": (2, None)}), [("s1", 1)]),
        (Filter(ranges={"model_calls": (2, 2)}), [("s1", 1)]),
        (Filter(ranges={"tokens": (None, 110)}), [("s1", 0), ("s1", 1), ("s2", 1), ("s0", 0)]),
        (Filter(ranges={"latency_s": (2.0, 5.0)}), [("s1", 0), ("s1", 1), ("s2", 1)]),
        (Filter(text="APPLES"), [("s1", 0), ("s1", 1), ("s2", 0), ("s2", 1)]),
        (Filter(text="pears"), [("s0", 0)]),
        (Filter(text="13"), [("s1", 1)]),
        (Filter(text="apples", outcome="correct", worker=B), [("s2", 1)]),
    ],
)
def test_filters(run_dir: Path, where: Filter, expected: list[tuple[str, int]]) -> None:
    index = RunIndex(run_dir)
    assert ids(index, where) == expected
    assert index.rows(where).total == len(expected)


def test_unknown_filter_or_sort_column_is_an_error(run_dir: Path) -> None:
    index = RunIndex(run_dir)
    with pytest.raises(ValueError, match="cannot filter by 'answer'"):
        index.rows(Filter(ranges={"answer": (1, 2)}))
    with pytest.raises(ValueError, match="cannot sort by 'answer'"):
        index.rows(sort="answer")


def test_sorting_keeps_file_order_among_ties(run_dir: Path) -> None:
    index = RunIndex(run_dir)
    assert ids(index, sort="latency_s", descending=True) == [
        ("s2", 0),
        ("s1", 1),
        ("s1", 0),
        ("s2", 1),
        ("s0", 0),
    ]
    assert ids(index, sort="sample_id") == [("s0", 0), ("s1", 0), ("s1", 1), ("s2", 0), ("s2", 1)]
    by_kind = ids(index, sort="error_kind")
    assert by_kind[-2:] == [("s0", 0), ("s2", 0)]  # none, then max_turns, then timeout
    assert ids(index, sort="correct", descending=True)[:2] == [("s1", 0), ("s2", 1)]


def test_paging(run_dir: Path) -> None:
    index = RunIndex(run_dir)
    page = index.rows(sort="tokens", descending=True, offset=1, limit=2)
    assert page.total == 5
    assert [(row.attempt.sample_id, row.attempt.attempt) for row in page.rows] == [
        ("s1", 0),
        ("s1", 1),
    ]
    assert index.rows(offset=5).rows == []


def test_record_reads_back_the_line(run_dir: Path) -> None:
    index = RunIndex(run_dir)
    for i, written in enumerate(LINES):
        assert index.record(i) == orjson.loads(written)


def test_refresh_takes_appended_lines_and_leaves_a_partial_one(run_dir: Path) -> None:
    index = RunIndex(run_dir)
    added = line("s3", 0, correct=True, answer="99")
    with open(run_dir / "samples.jsonl", "ab") as file:
        file.write(added[:20])
    assert index.refresh() == 0
    assert len(index) == 5
    with open(run_dir / "samples.jsonl", "ab") as file:
        file.write(added[20:] + line("s3", 1))
    assert index.refresh() == 2
    assert ids(index, Filter(text="99")) == [("s3", 0)]
    assert index.record(5) == orjson.loads(added)
    assert index.refresh() == 0


def test_a_shorter_replacement_is_indexed_afresh(run_dir: Path) -> None:
    index = RunIndex(run_dir)
    path = run_dir / "samples.jsonl"
    with open(path, "r+b") as file:  # the same file, truncated in place
        file.truncate(0)
        file.write(LINES[3] + LINES[1])
    assert index.refresh() == 2
    assert ids(index) == [("s2", 1), ("s1", 1)]
    assert index.record(1) == orjson.loads(LINES[1])


def test_a_file_renamed_over_is_indexed_afresh(run_dir: Path) -> None:
    index = RunIndex(run_dir)
    other = run_dir / "replacement"
    other.write_bytes(b"".join(LINES[::-1]) + line("s9", 0))
    os.replace(other, run_dir / "samples.jsonl")
    assert index.refresh() == 6
    assert ids(index)[0] == ("s0", 0)


def test_a_run_without_samples_yet_is_empty(tmp_path: Path) -> None:
    index = RunIndex(tmp_path)
    assert (len(index), index.rows().total) == (0, 0)
    (tmp_path / "samples.jsonl").write_bytes(LINES[0])
    assert index.refresh() == 1


def test_a_corrupt_line_is_an_error_naming_its_place(run_dir: Path) -> None:
    index = RunIndex(run_dir)
    with open(run_dir / "samples.jsonl", "ab") as file:
        file.write(b"{not json\n")
    with pytest.raises(ConfigError, match=f"at byte {sum(map(len, LINES))}"):
        index.refresh()
    (run_dir / "samples.jsonl").write_bytes(b"".join(LINES))
    assert index.refresh() == 5
    assert ids(index, Filter(text="13")) == [("s1", 1)]


def test_the_question_comes_from_any_attempt_of_the_sample(tmp_path: Path) -> None:
    (tmp_path / "samples.jsonl").write_bytes(line("s5", 0, ask=None) + line("s5", 1, ask="Plums?"))
    assert ids(RunIndex(tmp_path), Filter(text="plums")) == [("s5", 0), ("s5", 1)]


@pytest.mark.parametrize(
    "rewritten",
    [
        # The same length, only the first line's bytes changed (an answer of as many digits).
        [line("s1", 0, correct=True, answer="21", latency=3.0), *LINES[1:]],
        # The same length, only the last line's bytes changed.
        [*LINES[:4], line("s0", 0, answer="8", error=MAX_TURNS, ask=LINES_ASK)],
        # Longer: other records, then more.
        [LINES[1], LINES[0], *LINES[2:], line("s9", 0)],
    ],
)
def test_a_file_rewritten_in_place_no_shorter_is_indexed_afresh(
    run_dir: Path, rewritten: list[bytes]
) -> None:
    index = RunIndex(run_dir)
    path = run_dir / "samples.jsonl"
    assert len(b"".join(rewritten)) >= path.stat().st_size
    with open(path, "r+b") as file:  # the same file (inode), overwritten from its start
        file.write(b"".join(rewritten))
    assert index.refresh() == len(rewritten)
    assert [index.record(i) for i in range(len(index))] == [orjson.loads(x) for x in rewritten]


def test_sorting_by_worker_takes_each_attempts_first_worker(tmp_path: Path) -> None:
    lines = [line("a", 0, workers=(B,)), line("b", 0, workers=()), line("c", 0, workers=(A, B))]
    (tmp_path / "samples.jsonl").write_bytes(b"".join(lines))
    index = RunIndex(tmp_path)
    assert ids(index, sort="workers") == [("b", 0), ("c", 0), ("a", 0)]
    assert ids(index, sort="workers", descending=True) == [("a", 0), ("c", 0), ("b", 0)]
