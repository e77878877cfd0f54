"""A page of a run's attempts in file order read straight from samples.jsonl, before its index
is built: the first rows of a big run without waiting for every line to be parsed."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import BinaryIO

from agent_eval.results.record import AttemptRecord
from agent_eval.view.index import Page, Row, workers_of
from agent_eval.view.params import Query, parse_query

COUNTED = 1 << 20
"""Bytes counted at a time: a chunk that stays in the CPU's cache counts twice as fast as 8 MB."""
ORDER = ("offset", "limit", "sort", "desc")
"""The rows parameters that choose a page and its order, not which attempts."""


def plain_query(params: Mapping[str, str]) -> Query | None:
    """The rows query when it asks for attempts in file order, unfiltered; else None."""
    if any(value for name, value in params.items() if name not in ORDER):
        return None
    query = parse_query(params, ())
    return query if query.sort == "row" and not query.descending else None


def head_page(path: Path, offset: int, limit: int) -> Page:
    """Attempts `offset` to `offset + limit` in file order, as the index would give them, and
    the number of complete lines (a blank line, which no run writes, would count too)."""
    rows: list[Row] = []
    seen = start = 0
    try:
        file = open(path, "rb")  # noqa: SIM115 - read on below, past the page, to count lines
    except FileNotFoundError:
        return Page(total=0, rows=[])
    with file:
        for line in file:
            if not line.endswith(b"\n"):
                break  # a line still being written: the index waits for it too
            if line.isspace():
                start += len(line)
                continue
            if seen >= offset + limit:
                return Page(total=seen + 1 + _lines_left(file), rows=rows)
            if seen >= offset:
                rows.append(_row(path, seen, start, line))
            seen += 1
            start += len(line)
    return Page(total=seen, rows=rows)


def _row(path: Path, index: int, offset: int, line: bytes) -> Row:
    record = AttemptRecord.from_line(line[:-1], f"{path} at byte {offset}")
    return Row.of(index, tuple(workers_of(record.trajectory)), record)


def _lines_left(file: BinaryIO) -> int:
    """Complete lines from the file's position on."""
    count = 0
    while chunk := file.read(COUNTED):
        count += chunk.count(b"\n")
    return count
