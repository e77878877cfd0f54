"""What the engine runs: single-turn samples and multi-turn sessions, as plain dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class Origin:
    """Where an item was read: its file (or hub split) and line (or row) number."""

    source: str
    unit: Literal["line", "row"]
    number: int

    def __str__(self) -> str:
        return f"{self.source} {self.unit} {self.number}"


@dataclass(frozen=True)
class Sample:
    """One problem: a question (or chat messages) and its gold answer, kept as the full solution."""

    id: str
    question: str | None
    answer: str | None
    messages: list[dict[str, Any]] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    variant_of: str | None = None
    """The id of the sample this one perturbs (`dataset.perturb`); None for an original."""
    perturbation: str | None = None
    """The perturbation that made this variant: numbers, names, distractor, or a plug-in's."""
    origin: Origin | None = field(default=None, compare=False)
    """The row it was read from (a variant's is its original's); None when built in code."""
    files: dict[str, str] | None = None
    """Files (relative path: text) an agent program's working directory starts with."""
    check: str | None = None
    """The row's own check command: its verdict scores the attempt in place of `answer`."""


@dataclass(frozen=True)
class Turn:
    """One user turn; a challenge turn without `expected` expects the previous answer to stand."""

    user: str
    expected: str | None = None
    challenge: bool = False


@dataclass(frozen=True)
class Session:
    """A multi-turn conversation whose turns are scored one by one."""

    id: str
    turns: list[Turn]
    metadata: dict[str, Any] = field(default_factory=dict)
    origin: Origin | None = field(default=None, compare=False)
    """The row it was read from; None when built in code."""

    def expected_answers(self) -> list[str | None]:
        """The answer each turn expects, with challenge turns resolved to the answer they defend."""
        answers: list[str | None] = []
        for turn in self.turns:
            inherited = answers[-1] if turn.challenge and answers else None
            answers.append(turn.expected if turn.expected is not None else inherited)
        return answers


Item = Sample | Session


def place(item: Item) -> str:
    """Where to look for `item` in the data, for messages: "rows.jsonl line 3"."""
    found = f" ({item.origin})" if item.origin is not None else ""
    if isinstance(item, Sample) and item.perturbation is not None:
        return f"the {item.perturbation} variant of sample {item.variant_of!r}{found}"
    return str(item.origin) if item.origin is not None else f"sample {item.id!r}"
