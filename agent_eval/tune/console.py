"""The tune in the terminal: each run's live view, and a line for each trial as it ends."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from rich.console import Console
from rich.text import Text

from agent_eval.metrics.objectives import Objective
from agent_eval.progress import RunView
from agent_eval.progress.stats import duration_text
from agent_eval.run.evaluation import RunObserver
from agent_eval.tune.search import TrialOutcome
from agent_eval.tune.trials import settings_text

STATE_STYLES = {"complete": "green", "pruned": "yellow", "failed": "red"}


class ConsoleTune:
    """A live view per run; per trial, one line: number, state, scores, settings, time."""

    def __init__(self, console: Console, objectives: list[Objective], trials: int) -> None:
        self.console, self.objectives, self.trials = console, objectives, trials
        self._best: float | None = None

    @contextlib.asynccontextmanager
    async def run_view(self, title: str, total: int) -> AsyncIterator[RunObserver]:
        async with RunView(self.console, title, total=total) as view:
            yield view

    def trial_done(self, outcome: TrialOutcome) -> None:
        self.console.print(self.line(outcome), soft_wrap=True)

    def line(self, outcome: TrialOutcome) -> Text:
        """`trial 7/40 complete  quality.accuracy 0.812 ↑  temperature=0.31  1m03s  best`."""
        state = outcome.state
        if outcome.pruned_at is not None:
            state = f"pruned at {outcome.pruned_at}%"
        parts: list[Any] = [
            (f"trial {outcome.number}", "bold"),
            "  ",
            (state, STATE_STYLES.get(outcome.state, "")),
        ]
        for objective, value in zip(self.objectives, outcome.values, strict=False):
            shown = "-" if value is None else f"{value:.4g}"
            parts.append(f"  {objective.metric} {shown} {objective.arrow}")
        parts.append(f"  {settings_text(outcome.params)}")
        if outcome.failure:
            parts.append((f"  {outcome.failure}", "red"))
        else:
            parts.append(f"  {duration_text(outcome.seconds)}")
        if self._new_best(outcome):
            parts.append(("  best so far", "bold green"))
        return Text.assemble(*parts)

    def _new_best(self, outcome: TrialOutcome) -> bool:
        """Whether a complete trial beats every earlier one (one objective only)."""
        if outcome.state != "complete" or len(self.objectives) != 1:
            return False
        value, best = outcome.values[0], self._best
        if value is None or (best is not None and not self.objectives[0].better(value, best)):
            return False
        self._best = value
        return True
