"""`agent-eval tune` on a perturbed dataset: trials play the variants, robustness is optimised."""

from __future__ import annotations

import json
from pathlib import Path

from agent_eval.results.files import RunDirectory
from agent_eval.tune.search import Tuner
from agent_eval.tune.study_files import RUN_DIR
from tests.helpers.proxy import StartWorkers
from tests.helpers.tune_jobs import Outcomes, tune_job, two_step_workers


async def test_a_tune_optimises_robust_accuracy_over_each_trials_variants(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = await two_step_workers(start_workers)
    objectives = ("robustness.original_accuracy", "robustness.robust_accuracy")
    space = "agent.max_turns: {int: [1, 3]}\n"
    settings = ("dataset.perturb=distractor",)
    job = tune_job(tmp_path, [worker], space, 2, objectives, subset=4, settings=settings)
    async with Tuner(job, Outcomes()) as tuner:
        for turns in (1, 2):
            tuner.study.enqueue_trial({"agent.max_turns": turns})
        await tuner.search()
        trials = tuner.study.trials
    # One turn never answers; two do, rightly on the originals, and a distractor's number,
    # which the mock adds in place of the question's, makes every variant wrong.
    assert [tuple(t.values) for t in trials] == [(0.0, 0.0), (1.0, 0.0)]
    run = RunDirectory(job.tune_dir / trials[1].user_attrs[RUN_DIR])
    records = list(run.records())
    assert sorted(r.sample_id.endswith("~distractor") for r in records) == [False] * 4 + [True] * 4
    summary = json.loads((run.path / "summary.json").read_text())
    assert summary["robustness"]["by_kind"]["distractor"]["skipped"] == 0
