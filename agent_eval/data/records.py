"""What the engine runs: single-turn samples and multi-turn sessions, as plain dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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

    def expected_answers(self) -> list[str | None]:
        """The answer each turn expects, with challenge turns resolved to the answer they defend."""
        answers: list[str | None] = []
        for turn in self.turns:
            inherited = answers[-1] if turn.challenge and answers else None
            answers.append(turn.expected if turn.expected is not None else inherited)
        return answers


Item = Sample | Session
