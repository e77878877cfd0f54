"""Tune jobs over mock workers for the tests: a dataset the two-step mock answers, workers
that play it, and an observer that keeps each trial's outcome."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson

from agent_eval.metrics.objectives import parse_objectives
from agent_eval.run.config import load_run_config
from agent_eval.run.evaluation import RunObserver
from agent_eval.testing.mock_worker import MockWorker
from agent_eval.tune.search import TrialOutcome, Tune
from agent_eval.tune.space import SearchSpace
from agent_eval.tune.study import PrunerName, SamplerName, StudySetup
from tests.helpers.observer import QuietObserver
from tests.helpers.proxy import StartWorkers


def write_sums(path: Path, rows: int = 20, wrong_gold: frozenset[int] = frozenset()) -> Path:
    """`What is i plus 2i?`: the two-step mock adds the question's first two numbers, rightly,
    save for the rows in `wrong_gold`, whose gold is off by one."""
    lines = [
        orjson.dumps(
            {
                "id": f"q{i}",
                "question": f"What is {i} plus {2 * i}?",
                "answer": str(3 * i + (i in wrong_gold)),
            }
        )
        for i in range(1, rows + 1)
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


async def two_step_workers(
    start_workers: StartWorkers, n: int = 1, **behavior: Any
) -> list[MockWorker]:
    """`n` mock workers playing the calculator in two steps, with more `behavior` knobs set."""
    workers = await start_workers(n)
    for worker in workers:
        worker.behavior.update({"two_step": True, **behavior})
    return workers


class Outcomes:
    """A tune observer that keeps each trial's outcome and the titles of the runs."""

    def __init__(self) -> None:
        self.outcomes: list[TrialOutcome] = []
        self.titles: list[str] = []

    @contextlib.asynccontextmanager
    async def run_view(self, title: str, total: int) -> AsyncIterator[RunObserver]:
        self.titles.append(title)
        yield QuietObserver()

    def trial_done(self, outcome: TrialOutcome) -> None:
        self.outcomes.append(outcome)


def tune_job(
    tmp_path: Path,
    workers: list[MockWorker],
    space: str,
    trials: int,
    objectives: tuple[str, ...] = (),
    subset: int | None = None,
    pruner: PrunerName = "median",
    sampler: SamplerName = "tpe",
    settings: tuple[str, ...] = (),
    **flags: Any,
) -> Tune:
    """A tune of the two-step mock on `write_sums`' dataset, searching `space` (YAML text)."""
    data = write_sums(tmp_path / "sums.jsonl")
    (tmp_path / "space.yaml").write_text(space)
    given = {"rollout.endpoints": [w.url for w in workers], "dataset.name": str(data), **flags}
    base = load_run_config(None, given, ["eval.concurrency=2", "eval.replays=0", *settings])
    setup = StudySetup(
        tmp_path / "tune",
        parse_objectives(list(objectives), base.eval.k_values()),
        SearchSpace.load(tmp_path / "space.yaml"),
        subset,
        sampler,
        pruner,
        seed=0,
    )
    return Tune(base, setup, trials)
