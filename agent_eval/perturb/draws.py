"""New values for a question's numbers: of a similar size, written as the old ones are."""

from __future__ import annotations

import math
import random
from fractions import Fraction

from agent_eval.perturb.number_text import Mention


def nearby(mention: Mention, rng: random.Random) -> Fraction:
    """A new value of a similar size, written as the old one is: as many digits, as many
    trailing zeros, as many decimals; never 1 in place of a plural count."""
    low, high, excluded, scale = _neighbourhood(mention)
    new = rng.randint(low, high)
    while new in excluded:  # the range always holds at least two other values
        new = rng.randint(low, high)
    return new * scale


def every_nearby(mention: Mention, rng: random.Random) -> list[Fraction]:
    """Every value `nearby` may draw for `mention`, in a random order."""
    low, high, excluded, scale = _neighbourhood(mention)
    values = [n * scale for n in range(low, high + 1) if n not in excluded]
    rng.shuffle(values)
    return values


def every_similar(mention: Mention, rng: random.Random, count: int) -> list[Fraction]:
    """Up to `count` values from half to twice `mention`'s, with as many digits before and
    after the point, in a random order: for a number no round neighbour fits (the $60 that a
    quarter and a third of must both be whole)."""
    scale = Fraction(1, 10**mention.places)
    scaled = int(mention.value / scale)
    whole = len(str(int(mention.value))) if mention.value >= 1 else 0
    low = max(math.ceil(scaled / 2), 10 ** (whole - 1) * 10**mention.places if whole else 1)
    high = min(2 * scaled, 10**whole * 10**mention.places - 1)
    drawn = rng.sample(range(low, high + 1), min(count + 2, max(high - low + 1, 0)))
    return [n * scale for n in drawn if n != scaled and n * scale != 1][:count]


def multiples(mention: Mention) -> list[Fraction]:
    """Twice and three times `mention`'s value, then its whole half and third: for a number
    that steps must divide exactly and no value of as many digits fits (80 cards of which 2/5,
    then half of the rest, then 5/8 of what is left, become 160)."""
    value = mention.value
    smaller = [value / k for k in (2, 3) if (value / k).denominator == 1 and value / k > 1]
    return [value * 2, value * 3, *smaller]


def _neighbourhood(mention: Mention) -> tuple[int, int, set[int], Fraction]:
    """The new value's significant digits (low to high, none excluded) and their scale."""
    scaled = int(mention.value * 10**mention.places)
    zeros = len(str(scaled)) - len(str(scaled).rstrip("0"))
    base = scaled // 10**zeros
    digits = len(str(base))
    low = max(10 ** (digits - 1), math.ceil(base / 2))
    high = min(10**digits - 1, max(2 * base, base + 3))
    excluded = {base, 1} if scaled == base else {base}
    return low, high, excluded, Fraction(10**zeros, 10**mention.places)
