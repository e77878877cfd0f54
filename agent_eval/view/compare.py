"""The compare route of the API: two runs paired as `agent-eval report --compare` pairs them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_eval.errors import ConfigError
from agent_eval.metrics import AttemptScore
from agent_eval.report.compare import Row, compare, comparison_notes
from agent_eval.report.paired import PAIRED_HEADERS, Key, comparison_json, paired_comparison
from agent_eval.report.runs import Run
from agent_eval.view.catalog import Catalog
from agent_eval.view.derived import Derived
from agent_eval.view.refused import Refused
from agent_eval.view.runs import RunDir

SIDES = ("a", "b")


class Comparisons:
    """Answers /api/compare; keeps the last few answers, since pairing a large run takes long."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._answers: Derived[tuple[str, str], dict[str, Any]] = Derived()

    async def answer(self, params: Mapping[str, str]) -> dict[str, Any]:
        """The comparison `a` and `b` name; a Refused error when it cannot be made."""
        for name in params:
            if name not in SIDES:
                raise Refused(400, f"unknown parameter {name!r}; give a=RUN_ID&b=RUN_ID")
        first, second = [await self._run(params, side) for side in SIDES]

        async def reports() -> tuple[Run, Run]:
            return await self._report(first), await self._report(second)

        return await self._answers.get((first.id, second.id), reports, comparison)

    async def _run(self, params: Mapping[str, str], side: str) -> RunDir:
        run_id = params.get(side)
        if not run_id:
            raise Refused(400, f"missing parameter {side!r}: give a=RUN_ID&b=RUN_ID")
        run = await self.catalog.run(run_id)
        if run is None or run.kind != "run":
            raise Refused(404, f"no run {run_id!r} under the roots served")
        return run

    async def _report(self, run: RunDir) -> Run:
        try:
            return await self.catalog.report(run)
        except ConfigError as exc:  # no attempts yet, or a corrupt line: nothing to pair
            raise Refused(409, f"cannot compare {run.id!r}: {exc}") from None


def comparison(ids: tuple[str, str], a: Run, b: Run) -> dict[str, Any]:
    """`agent-eval report --compare --json`'s document, with the runs' ids, each row's cells as
    the console shows them, and each flipped attempt's answers and rewards."""
    rows, paired, notes = compare(a, b), paired_comparison(a, b), comparison_notes(a, b)
    document = comparison_json(rows, paired, notes)
    scores = [{(s.sample_id, s.attempt): s for s in run.scores} for run in (a, b)]
    pairing = paired.pairing
    return {
        **document,
        "ids": dict(zip(SIDES, ids, strict=True)),
        "paired_note": paired.note,
        "headers": list(PAIRED_HEADERS),
        "metrics": [_cells(row, json) for row, json in zip(rows, document["metrics"], strict=True)],
        "paired_metrics": [
            {"method": method, **_cells(row, {})}
            for row, method in zip(paired.rows, paired.methods, strict=True)
        ],
        "a_only": [_flip(key, scores) for key in pairing.a_only],
        "b_only": [_flip(key, scores) for key in pairing.b_only],
    }


def _cells(row: Row, shown: dict[str, Any]) -> dict[str, Any]:
    """The row's numbers, its text in the report's headers' order, and whether B is better."""
    return {**shown, "cells": list(row.cells()), "better": row.better}


def _flip(key: Key, scores: list[dict[Key, AttemptScore]]) -> dict[str, Any]:
    sides = {side: _outcome(by_key[key]) for side, by_key in zip(SIDES, scores, strict=True)}
    return {"sample_id": key[0], "attempt": key[1], **sides}


def _outcome(score: AttemptScore) -> dict[str, Any]:
    return {"answer": score.answer, "reward": score.reward}
