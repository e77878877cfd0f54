"""A page of a multi-turn run's sessions: each attempt's reward per turn, for the heatmap."""

from __future__ import annotations

from dataclasses import dataclass

from agent_eval.metrics.attempt import Attempt
from agent_eval.view.index import RunIndex
from agent_eval.view.params import Query


@dataclass(frozen=True)
class SessionRow:
    """One attempt at a session: its reward per turn and which turns challenged the answer."""

    index: int
    sample_id: str
    attempt: int
    turn_rewards: list[float | None] | None
    """None for an attempt at a single-turn sample; None per turn for an unscored session."""
    challenge_turns: list[int]


@dataclass(frozen=True)
class SessionPage:
    """The sessions of one page and how many attempts match the query in all."""

    total: int
    rows: list[SessionRow]


def sessions_page(index: RunIndex, query: Query) -> SessionPage:
    """The attempts of one page of the query, as their lines in samples.jsonl hold them."""
    page = index.rows(query.where, query.sort, query.descending, query.offset, query.limit)
    rows = [
        SessionRow(
            index=row.index,
            sample_id=row.attempt.sample_id,
            attempt=row.attempt.attempt,
            turn_rewards=_turn_rewards(row.attempt),
            challenge_turns=row.attempt.challenge_turns or [],
        )
        for row in page.rows
    ]
    return SessionPage(page.total, rows)


def _turn_rewards(attempt: Attempt) -> list[float | None] | None:
    """A session's reward per turn, a None for each turn of one never scored; None for a sample."""
    if attempt.turn_rewards is not None:
        return list(attempt.turn_rewards)
    # A session's line has an answer per turn, scored or not; a sample's has none.
    return None if attempt.turn_answers is None else [None] * len(attempt.turn_answers)
