"""A run's first rows read from samples.jsonl before its index: the rows the index gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_eval.errors import ConfigError
from agent_eval.view.head import head_page, plain_query
from agent_eval.view.index import RunIndex
from agent_eval.view.params import ParameterError
from tests.helpers.index_lines import A, B, line

LINES = [
    line(f"s{n // 2}", n % 2, correct=n % 3 == 0, workers=(A, B)[: 1 + n % 2]) for n in range(9)
]


@pytest.fixture
def run(tmp_path: Path) -> Path:
    # A blank line (no run writes one) is skipped on the page; past it, lines are only counted.
    (tmp_path / "samples.jsonl").write_bytes(LINES[0] + b"\n" + b"".join(LINES[1:]))
    return tmp_path


@pytest.mark.parametrize(("offset", "limit"), [(0, 50), (0, 3), (2, 4), (8, 5), (9, 5)])
def test_a_page_is_the_indexs_page(run: Path, offset: int, limit: int) -> None:
    expected = RunIndex(run).rows(offset=offset, limit=limit)
    page = head_page(run / "samples.jsonl", offset, limit)
    assert page.total == expected.total == 9
    assert [row.to_dict() for row in page.rows] == [row.to_dict() for row in expected.rows]


def test_a_line_being_written_waits(run: Path) -> None:
    with (run / "samples.jsonl").open("ab") as file:
        file.write(LINES[0][:40])
    page = head_page(run / "samples.jsonl", 0, 50)
    assert page.total == 9 and len(page.rows) == 9


def test_a_run_without_attempts_yet_has_none(tmp_path: Path) -> None:
    page = head_page(tmp_path / "samples.jsonl", 0, 50)
    assert (page.total, page.rows) == (0, [])


def test_a_corrupt_line_on_the_page_says_where(run: Path) -> None:
    path = run / "samples.jsonl"
    path.write_bytes(LINES[0] + b"{not json\n")
    with pytest.raises(ConfigError, match="at byte"):
        head_page(path, 0, 50)


@pytest.mark.parametrize(
    ("params", "plain"),
    [
        ({}, True),
        ({"offset": "50", "limit": "50", "sort": "row", "desc": "0", "q": ""}, True),
        ({"sort": "latency_s"}, False),
        ({"desc": "1"}, False),
        ({"outcome": "wrong"}, False),
        ({"min_tokens": "3"}, False),
    ],
)
def test_only_file_order_unfiltered_is_read_before_the_index(
    params: dict[str, str], plain: bool
) -> None:
    assert (plain_query(params) is not None) is plain


def test_a_bad_window_is_still_refused() -> None:
    with pytest.raises(ParameterError):
        plain_query({"limit": "0"})
