"""Majority vote over a sample's attempts: the answers tied for the most votes, and the exact
chance that the vote of k attempts drawn from the n is right (what maj@k averages)."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Mapping
from fractions import Fraction
from math import comb

from agent_eval.metrics.base import normalize_answer

Verdicts = Mapping[tuple[str | None, bool], int]
"""A sample's attempts counted by (normalised answer, correct); None is no answer."""

MAJ_AT_K = (
    "maj@k: the share of samples whose most frequent answer among k attempts is right, "
    "averaged over every k of a sample's n attempts (so maj@1 is pass@1); a tie of t answers "
    "counts 1/t, and attempts without an answer do not vote"
)
"""maj@k's definition, shown beside it wherever it is shown."""


def top_answers(answers: Iterable[str | None]) -> list[str]:
    """The normalised answers tied for the most votes, in the order first given; none without
    an answer. One answer is a majority; several are a tie."""
    votes = Counter(a for a in map(normalize_answer, answers) if a is not None)
    most = max(votes.values(), default=0)
    return [answer for answer, count in votes.items() if count == most]


def majority_share(verdicts: Verdicts, k: int) -> Fraction:
    """The chance that the most frequent answer of k attempts drawn from the sample's n is right.

    A tie of t answers is a fair pick among them (1/t each): lm-eval and verl break it by which
    answer came first, which is the same pick when attempts are in no particular order. An
    answer's attempts count as right in the share they were marked right. Attempts without an
    answer abstain; k that all abstain count as their own verdicts, so maj@1 is pass@1.
    """
    groups = _groups(verdicts)
    silent, silent_right = groups.pop(None, (0, 0))
    n = silent + sum(size for size, _ in groups.values())
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")
    sizes = sorted(size for size, _ in groups.values())
    share = Fraction(0)
    for size, right in groups.values():
        others = list(sizes)
        others.remove(size)
        share += Fraction(right, size) * _wins(size, tuple(others), silent, k)
    if silent:
        share += comb(silent, k) * Fraction(silent_right, silent)
    return share / comb(n, k)


def _groups(verdicts: Verdicts) -> dict[str | None, tuple[int, int]]:
    """Each answer's attempts and how many of them are right; None's are those without one."""
    groups: dict[str | None, tuple[int, int]] = {}
    for (answer, correct), count in verdicts.items():
        size, right = groups.get(answer, (0, 0))
        groups[answer] = (size + count, right + count * correct)
    return groups


@functools.lru_cache(maxsize=4096)
def _wins(size: int, others: tuple[int, ...], abstained: int, k: int) -> Fraction:
    """k-draws in which an answer given `size` times has the most votes, a t-way tie as 1/t;
    `others` are the other answers' sizes. Samples often share a shape, hence the cache."""
    total = Fraction(0)
    for votes in range(1, min(size, k) + 1):
        ways = _ways(others, abstained, votes, k - votes)
        total += comb(size, votes) * sum(Fraction(w, 1 + tied) for tied, w in enumerate(ways))
    return total


def _ways(others: tuple[int, ...], abstained: int, votes: int, room: int) -> list[int]:
    """ways[e]: draws of `room` attempts among the others and the abstainers in which no other
    answer has more than `votes` votes and e of them have exactly as many."""
    # table[s][e]: s attempts drawn so far, e answers tied; abstainers never tie.
    table = [[comb(abstained, s)] + [0] * len(others) for s in range(room + 1)]
    left = sum(min(size, votes) for size in others)
    for size in others:
        left -= min(size, votes)
        grown = [[0] * (len(others) + 1) for _ in range(room + 1)]
        for s, row in enumerate(table):
            if s + left < room - min(size, votes):
                continue  # even every later answer's most cannot fill the draw
            for tied, count in enumerate(row):
                if count:
                    for i in range(min(size, votes, room - s) + 1):
                        grown[s + i][tied + (i == votes)] += count * comb(size, i)
        table = grown
    return table[room]
