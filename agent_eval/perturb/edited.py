"""The built-in perturbations on a benchmark's samples: new values and added words chosen as
for any problem, made only through the edits the benchmark allows (agent_eval.data.edits)."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from fractions import Fraction

from agent_eval.data.edits import SampleEdits
from agent_eval.data.records import Sample
from agent_eval.perturb.distractor import distracted
from agent_eval.perturb.draws import nearby
from agent_eval.perturb.names import people, renamed, renames
from agent_eval.perturb.number_text import Mention, mentions, written

DRAWS = 20
"""Draws of a new number before giving up: a small range (2 to 9) may be mostly taken."""

YEARS = (1800, 2100)
"""A whole number between these is taken for a year: it moves a few years back."""

EditedPerturbation = Callable[[SampleEdits, Sample, random.Random], Sample | None]


def new_numbers(edits: SampleEdits, sample: Sample, rng: random.Random) -> Sample | None:
    """Each number the benchmark lets swap, of a similar size, written as before."""
    text, swappable = edits.text(sample), set(edits.swappable(sample))
    if text is None or not swappable:
        return None
    taken = {text[m.start : m.end] for m in mentions(text)}
    swaps: dict[str, str] = {}
    for mention in mentions(text):
        literal = text[mention.start : mention.end]
        if literal in swappable and literal not in swaps and not (mention.word or mention.commas):
            new = _drawn(mention, taken, rng)
            if new is None:
                return None
            swaps[literal] = new
            taken.add(new)
    return edits.swapped(sample, swaps) if swaps else None


def new_names(edits: SampleEdits, sample: Sample, rng: random.Random) -> Sample | None:
    """Each person's first name the benchmark lets swap, renamed. Objects stay: a value names
    a thing for a function to look up (Apple the company), not one of a kind to count."""
    text, swappable = edits.text(sample), edits.swappable(sample)
    if text is None or not swappable:
        return None
    found = renames((text,), rng)
    first = {name for name in people(text) if not _later_in_a_name(name).search(text)}
    swaps = {word: renamed(word, found) for word in swappable if word in first}
    return edits.swapped(sample, swaps) if swaps else None


def _later_in_a_name(name: str) -> re.Pattern[str]:
    """`name` after a capitalised word: a place or a surname (San Diego), not a first name."""
    return re.compile(rf"\b[A-Z]\w*\.? {re.escape(name)}\b")


def add_distractor(edits: SampleEdits, sample: Sample, rng: random.Random) -> Sample | None:
    """One sentence about something else before the question, clear of what the model reads
    and the gold checks."""
    text = edits.text(sample)
    if not text:
        return None
    around = edits.context(sample)
    used = {m.value for m in mentions(text)} | {Fraction(n) for n in re.findall(r"\d+", around)}
    question = distracted(text, f"{text}\n{around}", used, rng)
    return edits.told(sample, question) if question is not None else None


EDITED: dict[str, EditedPerturbation] = {
    "numbers": new_numbers,
    "names": new_names,
    "distractor": add_distractor,
}
"""The built-in kinds a benchmark's samples take; a plug-in kind knows questions only."""


def _drawn(mention: Mention, taken: set[str], rng: random.Random) -> str | None:
    """A new value for `mention`, written as it is, that no other number of the text is;
    None when a few draws find none."""
    for _ in range(DRAWS):
        value = _earlier_year(mention, rng) if _is_year(mention) else nearby(mention, rng)
        text = written(value, mention.places, commas=False)
        if text not in taken:
            return text
    return None


def _is_year(mention: Mention) -> bool:
    """A number a question most likely writes as a year: a far future one would be nonsense."""
    return mention.places == 0 and YEARS[0] <= mention.value <= YEARS[1]


def _earlier_year(mention: Mention, rng: random.Random) -> Fraction:
    return Fraction(rng.randint(int(mention.value) - 25, int(mention.value) - 1))
