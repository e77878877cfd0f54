"""Where the members of a JSON object are in its bytes, so some can be cut out or nulled and
the rest left byte for byte as the worker wrote them."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

_STRUCTURE = re.compile(rb'["{}\[\]]')
_QUOTE_OR_BACKSLASH = re.compile(rb'["\\]')
_SPACE = b" \t\r\n"
_SCALAR_END = re.compile(rb"[,}\]\s]")


class SpanError(ValueError):
    """Bytes that are not the JSON the scan expected."""


@dataclass(frozen=True, slots=True)
class Member:
    """One member of an object: its key and where it starts, its value starts and it ends."""

    key: str
    start: int
    value: int
    end: int


@dataclass(frozen=True, slots=True)
class Edit:
    """Bytes `start:end` replaced by `text`."""

    start: int
    end: int
    text: bytes = b""


def members(data: bytes, at: int, parsed: Any = None) -> list[Member]:
    """The members of the object whose `{` is at `at` (`parsed`: its value, when known, which
    finds where most members end at once). Raises: SpanError when malformed."""
    known = parsed if isinstance(parsed, dict) else {}
    if data[at : at + 1] != b"{":
        raise SpanError(f"no object at byte {at}")
    found: list[Member] = []
    pos = _skip_space(data, at + 1)
    if data[pos : pos + 1] == b"}":
        return found
    while True:
        start = pos
        key_end = _string_end(data, pos)
        pos = _skip_space(data, key_end)
        if data[pos : pos + 1] != b":":
            raise SpanError(f"no colon at byte {pos}")
        value = _skip_space(data, pos + 1)
        key = _key(data[start:key_end])
        end = _known_end(data, value, known[key]) if key in known else value_end(data, value)
        found.append(Member(key, start, value, end))
        pos = _skip_space(data, end)
        if data[pos : pos + 1] == b"}":
            return found
        if data[pos : pos + 1] != b",":
            raise SpanError(f"no comma at byte {pos}")
        pos = _skip_space(data, pos + 1)


def elements(data: bytes, at: int, parsed: Any = None) -> Iterator[tuple[int, Any]]:
    """Where each value of the array whose `[` is at `at` starts, with its value when the
    array's (`parsed`) is known. Raises: SpanError."""
    if data[at : at + 1] != b"[":
        raise SpanError(f"no array at byte {at}")
    known = parsed if isinstance(parsed, list) else []
    pos = _skip_space(data, at + 1)
    if data[pos : pos + 1] == b"]":
        return
    index = 0
    while True:
        value = known[index] if index < len(known) else None
        yield pos, value
        end = _known_end(data, pos, value) if index < len(known) else value_end(data, pos)
        pos = _skip_space(data, end)
        index += 1
        if data[pos : pos + 1] == b"]":
            return
        if data[pos : pos + 1] != b",":
            raise SpanError(f"no comma at byte {pos}")
        pos = _skip_space(data, pos + 1)


def value_end(data: bytes, at: int) -> int:
    """Where the value starting at `at` ends. Raises: SpanError when it does not."""
    first = data[at : at + 1]
    if first == b'"':
        return _string_end(data, at)
    if first not in (b"{", b"["):
        match = _SCALAR_END.search(data, at)
        end = match.start() if match else len(data)
        if end == at:
            raise SpanError(f"no value at byte {at}")
        return end
    depth, pos = 0, at
    while (match := _STRUCTURE.search(data, pos)) is not None:
        mark = match.group()
        if mark == b'"':
            pos = _string_end(data, match.start())
            continue
        depth += 1 if mark in (b"{", b"[") else -1
        pos = match.end()
        if depth == 0:
            return pos
    raise SpanError("the value does not end")


def _known_end(data: bytes, at: int, value: Any) -> int:
    """Where the value at `at`, known to be `value`, ends: at once when the worker wrote it as
    orjson does (an object, array or string ends itself), else found by scanning."""
    if isinstance(value, (dict, list, str)):
        try:
            written = orjson.dumps(value)
        except orjson.JSONEncodeError:
            return value_end(data, at)
        if data.startswith(written, at):
            return at + len(written)
    return value_end(data, at)


def removals(data: bytes, found: list[Member], cut: Iterable[str]) -> list[Edit]:
    """The edits that take the members named `cut` out of an object in `data`, commas and
    all; an object left empty is `{}`."""
    names = set(cut)
    edits: list[Edit] = []
    index = 0
    while index < len(found):
        if found[index].key not in names:
            index += 1
            continue
        last = index
        while last + 1 < len(found) and found[last + 1].key in names:
            last += 1
        edits.append(_run_edit(data, found, index, last))
        index = last + 1
    return edits


def nulled(member: Member) -> Edit:
    """The edit that makes `member`'s value null."""
    return Edit(member.value, member.end, b"null")


def apply(data: bytes, edits: list[Edit]) -> bytes:
    """`data` with the (non-overlapping) `edits` made."""
    if not edits:
        return data
    pieces, pos = [], 0
    for edit in sorted(edits, key=lambda e: e.start):
        pieces += [data[pos : edit.start], edit.text]
        pos = edit.end
    pieces.append(data[pos:])
    return b"".join(pieces)


def _run_edit(data: bytes, found: list[Member], first: int, last: int) -> Edit:
    """The edit taking out members `first` to `last`: with the comma before them when a member
    precedes, else with the one after, else with the space around them."""
    if first > 0:
        return Edit(found[first - 1].end, found[last].end)
    if last + 1 < len(found):
        return Edit(found[first].start, found[last + 1].start)
    start = found[first].start
    while data[start - 1] in _SPACE:
        start -= 1
    return Edit(start, _skip_space(data, found[last].end))


def _skip_space(data: bytes, pos: int) -> int:
    while pos < len(data) and data[pos] in _SPACE:
        pos += 1
    return pos


def _string_end(data: bytes, at: int) -> int:
    """Where the string whose opening quote is at `at` ends (after its closing quote)."""
    if data[at : at + 1] != b'"':
        raise SpanError(f"no string at byte {at}")
    pos = at + 1
    while (match := _QUOTE_OR_BACKSLASH.search(data, pos)) is not None:
        if match.group() == b'"':
            return match.end()
        pos = match.end() + 1  # the escaped character
    raise SpanError("a string does not end")


def _key(raw: bytes) -> str:
    if b"\\" not in raw:
        return raw[1:-1].decode("utf-8", "replace")
    key = orjson.loads(raw)
    return key if isinstance(key, str) else ""
