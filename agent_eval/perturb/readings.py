"""Whole readings of a solution: one source for every operand at once, kept only where the
solution hangs together (each step before the answer used later, each question number read)."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

_MAX_READINGS = 4096
"""Whole readings looked at before giving up: more would cost time for a problem no draw fits."""


@dataclass(frozen=True)
class Source:
    """Where an operand's value comes from: a question number (or its percent), an earlier
    annotation's result (by index), or the solution itself."""

    kind: Literal["question", "percent", "result", "constant"]
    key: Fraction


Reading = list[list[tuple[Source, ...]]]
"""One source for each operand of each step, each a one-element tuple as in a plan's sources."""


def plausible(
    sources: Sequence[Sequence[tuple[Source, ...]]],
    final: int,
    varied: tuple[set[Fraction], set[Fraction]],
    kept: set[Fraction],
) -> list[Reading]:
    """The whole readings in which every step before the `final` one is used by a later step,
    every `varied` question number by some step (the second set, numbers a cue word may bring
    too, by exactly one: the cue brings the others), and every `kept` one (a number the
    question writes and that stays) by some step where one may read it: a result no later step
    reads, or a number the question gives and no step uses, would be a reading the solution did
    not mean. Empty where none is, or where there are too many to look at."""
    open_ = [(s, o) for s, row in enumerate(sources) for o, each in enumerate(row) if len(each) > 1]
    if math.prod(len(sources[s][o]) for s, o in open_) > _MAX_READINGS:
        return []
    readable = {s.key for row in sources for each in row for s in each if s.kind == "constant"}
    return [
        reading
        for reading in _readings(sources, open_)
        if _whole(reading, final, varied, kept & readable)
    ]


def _readings(
    sources: Sequence[Sequence[tuple[Source, ...]]], open_: list[tuple[int, int]]
) -> Iterator[Reading]:
    for chosen in itertools.product(*(sources[s][o] for s, o in open_)):
        picked = dict(zip(open_, chosen, strict=True))
        yield [
            [(picked.get((s, o), each[0]),) for o, each in enumerate(row)]
            for s, row in enumerate(sources)
        ]


def _whole(
    reading: Reading, final: int, varied: tuple[set[Fraction], set[Fraction]], kept: set[Fraction]
) -> bool:
    used_results = {
        int(source.key) for row in reading for (source,) in row if source.kind == "result"
    }
    numbers = Counter(
        source.key for row in reading for (source,) in row if source.kind in ("question", "percent")
    )
    constants = {source.key for row in reading for (source,) in row if source.kind == "constant"}
    everywhere, once = varied
    return (
        set(range(final)) <= used_results
        and everywhere <= set(numbers)
        and all(numbers[value] == 1 for value in once)
        and kept <= constants
    )
