"""A sample's page: its attempts with the question and gold answer from the run's dataset, how
far each attempt's answer agrees with the others', and their messages in one shape."""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agent_eval.agents.trajectory import question
from agent_eval.data import Item, Session
from agent_eval.errors import AgentEvalError
from agent_eval.metrics import normalize_answer, top_answers
from agent_eval.run.config import CONFIG_FILE, load_run_config
from agent_eval.run.parts import dataset_items
from agent_eval.run.scoring import gold_answer
from agent_eval.view.messages import drawable

KEPT = 4
"""Datasets kept in memory at once: those of the runs being looked at."""


@dataclass(frozen=True)
class Expected:
    """What the dataset asks of one sample, and the answer it scores against."""

    question: str | None
    gold: str | list[str | None] | None
    """A session's gold is one answer per turn (a challenge turn's: the answer it defends)."""
    turns: list[dict[str, Any]] | None = None
    """A session's turns: the user's text, the expected answer, whether it is a challenge."""


@dataclass(frozen=True)
class Dataset:
    """A run's dataset as sample id -> Expected; `note` says why it is empty when unreadable."""

    name: str | None
    items: dict[str, Expected]
    note: str | None = None


@dataclass(frozen=True)
class Agreement:
    """How one attempt's answer stands among its sample's attempts."""

    answered: bool
    same: int
    """Other attempts whose answer, normalised as maj@k normalises it, is this one's."""
    others: int
    majority: bool
    """Whether this answer alone has the most votes: the one maj@k votes for."""
    tied: int = 0
    """How many answers, this one among them, share the most votes; 0 when it is no such tie."""


def sample_body(run_dir: Path, sample_id: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    """The sample endpoint's answer: the attempts' records (their messages in the page's shape),
    question, gold and agreements."""
    dataset = run_dataset(run_dir)
    expected = dataset.items.get(sample_id)
    note = dataset.note
    if expected is None and note is None:
        note = f"sample {sample_id!r} is not in dataset {dataset.name!r} as config.yaml names it"
    asked = expected.question if expected else None
    return {
        "sample_id": sample_id,
        "question": asked or _asked(records),
        "gold": expected.gold if expected else None,
        "gold_note": note,
        "turns": expected.turns if expected else None,
        "agreements": [asdict(a) for a in agreements([r.get("answer") for r in records])],
        "attempts": [drawable(record) for record in records],
    }


def _asked(records: list[dict[str, Any]]) -> str | None:
    """The question as the attempts were asked it, for a sample the dataset cannot give."""
    return next(filter(None, (question(r.get("trajectory") or {}) for r in records)), None)


def agreements(answers: list[str | None]) -> list[Agreement]:
    """Each answer's agreement with the others; an attempt without an answer agrees with none."""
    normalised = [normalize_answer(answer) for answer in answers]
    counts = Counter(answer for answer in normalised if answer is not None)
    top = top_answers(answers)
    tied = len(top) if len(top) > 1 else 0
    return [
        Agreement(
            answered=answer is not None,
            same=counts[answer] - 1 if answer is not None else 0,
            others=len(answers) - 1,
            majority=top == [answer],
            tied=tied if answer in top else 0,
        )
        for answer in normalised
    ]


def run_dataset(run_dir: Path) -> Dataset:
    """The dataset the run's config.yaml names, read again only when config.yaml changes."""
    path = run_dir / CONFIG_FILE
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        return Dataset(None, {}, f"{path} is missing, so the run's dataset is unknown")
    return _read_dataset(path, stamp)


@functools.lru_cache(maxsize=KEPT)
def _read_dataset(path: Path, stamp: int) -> Dataset:
    # `stamp` is part of the cache key: an edited config is read again.
    try:
        config = load_run_config(path, {}, [])
    except (AgentEvalError, ValueError) as exc:
        return Dataset(None, {}, f"{path} cannot be read ({exc}); fix it to see gold answers")
    name = config.dataset_name
    try:
        items = {item.id: _expected(item) for item in dataset_items(config)}
    except (AgentEvalError, OSError) as exc:
        return Dataset(name, {}, f"dataset {name!r} cannot be read now: {exc}")
    return Dataset(name, items)


def _expected(item: Item) -> Expected:
    if isinstance(item, Session):
        gold = item.expected_answers()
        turns = [
            {"user": turn.user, "expected": expected, "challenge": turn.challenge}
            for turn, expected in zip(item.turns, gold, strict=True)
        ]
        return Expected(item.turns[0].user, gold, turns)
    asked = item.question or question({"messages": item.messages or []})
    return Expected(asked, _gold(item.answer))


def _gold(answer: str | None) -> str | None:
    try:
        return gold_answer(answer)
    except ValueError:  # a GSM8K marker with nothing after it: the scorer failed on it too
        return answer
