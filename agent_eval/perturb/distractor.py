"""`distractor`: one irrelevant sentence with a number before the question (GSM-IC)."""

from __future__ import annotations

import random
import re
from collections.abc import Collection
from fractions import Fraction

from agent_eval.data import Sample
from agent_eval.perturb.base import Variant
from agent_eval.perturb.names import people
from agent_eval.perturb.number_text import mentions, worked

# (about a person of the problem, about no one, a word that makes it relevant if the problem
# has it). The number is the one thing the model must learn to ignore.
_TEMPLATES = (
    (
        "{who}'s neighbour has a dog that is {n} years old.",
        "A neighbour's dog is {n} years old.",
        "dog",
    ),
    ("{who}'s cousin lives {n} miles away.", "The nearest lake is {n} miles away.", "mile"),
    (
        "{who}'s favourite song is {n} minutes long.",
        "The radio played a song {n} minutes long.",
        "song",
    ),
    (
        "{who}'s grandmother turned {n} last spring.",
        "The oak tree in the park is {n} years old.",
        "year",
    ),
    (
        "{who} once counted {n} birds on a fence.",
        "There were {n} birds on the fence yesterday.",
        "bird",
    ),
    ("{who}'s school has {n} classrooms.", "The town library has {n} shelves.", "class"),
    ("{who}'s street has {n} lamp posts.", "The street outside has {n} lamp posts.", "lamp"),
)
_QUESTION_START = re.compile(r"(?:^|(?<=[.!?])\s+)(?=[^.!?]*\?\s*$)")


def add_distractor(sample: Sample, rng: random.Random) -> Variant | None:
    """`sample` with one sentence about something else, told before its question sentence."""
    if not sample.question or sample.answer is None:
        return None
    used = {m.value for m in mentions(sample.question) + worked(sample.answer)}
    question = distracted(sample.question, sample.question, used, rng)
    return Variant(question, sample.answer) if question is not None else None


def distracted(
    question: str, around: str, used: Collection[Fraction], rng: random.Random
) -> str | None:
    """`question` with one sentence before its question sentence, on a topic `around` never
    names and with a number between 3 and 97 not in `used`; None when every topic is named."""
    question = question.rstrip()
    templates = [t for t in _TEMPLATES if t[2] not in around.lower()]
    if not templates:
        return None
    personal, generic, _ = rng.choice(templates)
    who = people(question)
    number = rng.choice([n for n in range(3, 98) if n not in used])
    sentence = (personal if who else generic).format(who=who[0] if who else "", n=number)
    start = _question_start(question)
    before = question[:start].rstrip()
    inserted = f"{before} {sentence} " if before else f"{sentence} "
    return inserted + question[start:].lstrip()


def _question_start(question: str) -> int:
    """Where the sentence that asks the question begins; the last sentence's start without one."""
    match = _QUESTION_START.search(question)
    if match is not None:
        return match.end()
    ends = [m.end() for m in re.finditer(r"[.!?]\s+", question)]
    return ends[-1] if ends else 0
