"""`agent-eval tune`'s search over mock workers: pruning, the Pareto front, best settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from agent_eval.errors import ConfigError
from agent_eval.results.files import RunDirectory
from agent_eval.tune.outputs import choose
from agent_eval.tune.search import Tuner
from agent_eval.tune.study_files import FAILURE, RUN_DIR, optuna_module
from tests.helpers.proxy import StartWorkers
from tests.helpers.tune_jobs import Outcomes, tune_job, two_step_workers

TURNS = "agent.max_turns: {int: [1, 3]}\n"
"""The two-step mock needs two model calls: one turn is always wrong, two or three right."""


async def test_a_hopeless_trial_is_pruned_marked_so_and_its_run_kept(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    # Each trial takes a few seconds: room to prune it mid-way.
    (worker,) = await two_step_workers(start_workers, latency=0.05)
    job = tune_job(tmp_path, [worker], TURNS, trials=5)
    seen = Outcomes()
    async with Tuner(job, seen) as tuner:
        for turns in (2, 2, 3, 2, 1):
            tuner.study.enqueue_trial({"agent.max_turns": turns})
        await tuner.search()
        trials = tuner.study.trials
    state = optuna_module().trial.TrialState
    assert [t.state for t in trials] == [state.COMPLETE] * 4 + [state.PRUNED]
    assert [t.value for t in trials[:4]] == [1.0] * 4
    hopeless = trials[4]
    steps = sorted(hopeless.intermediate_values)
    assert steps and 20 <= steps[-1] < 100 and hopeless.intermediate_values[steps[-1]] == 0.0
    outcome = seen.outcomes[4]
    assert outcome.state == "pruned" and outcome.pruned_at == steps[-1]
    kept = RunDirectory(job.tune_dir / hopeless.user_attrs[RUN_DIR])
    played = list(kept.records())
    assert 0 < len(played) < 20 and not any(r.correct for r in played)
    summary = yaml.safe_load((kept.path / "summary.json").read_text())
    assert summary["complete"] is False and summary["attempts"] == len(played)


async def test_two_objectives_give_the_pareto_front_as_run_configs(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = await two_step_workers(start_workers)
    objectives = ("quality.accuracy", "efficiency.calls.model_calls_per_attempt")
    job = tune_job(tmp_path, [worker], TURNS, trials=6, objectives=objectives, subset=6)
    async with Tuner(job, Outcomes()) as tuner:
        for turns in (1, 2, 3):
            tuner.study.enqueue_trial({"agent.max_turns": turns})
        await tuner.search()
        chosen = choose(tuner)
        trials = tuner.study.trials
    values = {t.number: tuple(t.values) for t in trials}
    assert values[0] == (0.0, 1.0) and values[1] == values[2] == (1.0, 2.0)

    def dominated(v: tuple[float, ...]) -> bool:
        return any(w[0] >= v[0] and w[1] <= v[1] and w != v for w in values.values())

    front = {number for number, v in values.items() if not dominated(v)}
    assert {c.trial.number for c in chosen} == front
    assert [c.path.name for c in chosen] == [f"pareto-{i}.yaml" for i in range(1, len(front) + 1)]
    accuracies = [values[c.trial.number][0] for c in chosen]
    assert accuracies == sorted(accuracies, reverse=True)  # by the first objective, best first
    for choice in chosen:
        written = yaml.safe_load(choice.path.read_text())
        assert written["agent"]["max_turns"] == choice.trial.params["agent.max_turns"]
        assert written["dataset"]["subset"] is None and written["output"]["dir"] is None
        assert "trial" in choice.path.read_text().splitlines()[0]
    assert all(FAILURE not in t.user_attrs for t in trials)


async def test_the_search_finds_the_low_temperature_the_mock_answers_right_at(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = await two_step_workers(start_workers, wrong_above_temperature=0.5)
    space = "sampling.temperature: {float: [0.0, 1.2]}\n"
    job = tune_job(tmp_path, [worker], space, trials=20, subset=8)
    async with Tuner(job, Outcomes()) as tuner:
        await tuner.search()
        (best,) = choose(tuner)
        trials = tuner.study.trials
    assert len(trials) == 20
    assert best.trial.value == 1.0 and best.trial.params["sampling.temperature"] <= 0.5
    assert yaml.safe_load(best.path.read_text())["sampling"]["temperature"] <= 0.5
    # Every trial on the wrong side scored 0 or was pruned; every one on the right side, 1.
    for trial in trials:
        hot = trial.params["sampling.temperature"] > 0.5
        assert trial.value == (0.0 if hot else 1.0) or (hot and trial.value is None)


async def test_workers_proxy_and_scorer_restart_only_when_their_settings_change(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    workers = await two_step_workers(start_workers, 2)
    space = (
        "sampling.temperature: {float: [0.0, 1.0]}\n"
        "proxy.policy: {categorical: [round_robin, least_requests]}\n"
    )
    job = tune_job(tmp_path, workers, space, trials=4, subset=4, pruner="none")
    plan = [
        (0.1, "round_robin"),
        (0.7, "round_robin"),
        (0.2, "least_requests"),
        (0.3, "least_requests"),
    ]
    async with Tuner(job, Outcomes()) as tuner:
        for temperature, policy in plan:
            tuner.study.enqueue_trial({"sampling.temperature": temperature, "proxy.policy": policy})
        await tuner.search()
        starts = dict(tuner.server.starts)
    assert starts == {"workers": 1, "proxy": 2, "scorer": 1}
    assert all(w.stats.generation_requests > 0 for w in workers)
    # Trials that share a proxy each count their own load, not the proxy's running total.
    for trial in range(4):
        run_dir = job.tune_dir / f"trial-{trial}"
        load = json.loads((run_dir / "workers.json").read_text())["workers"]
        calls = sum(r.model_calls for r in RunDirectory(run_dir).records())
        assert sum(w["served"] for w in load) == calls == 8


async def test_a_second_tune_on_the_same_directory_is_refused_while_the_first_runs(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = await two_step_workers(start_workers)
    job = tune_job(tmp_path, [worker], TURNS, trials=1)
    async with Tuner(job, Outcomes()):
        with pytest.raises(ConfigError, match="another agent-eval tune is running"):
            async with Tuner(job, Outcomes()):
                pass
    async with Tuner(job, Outcomes()) as again:  # free once the first has stopped
        assert again.study.trials == []


async def test_a_failing_trial_is_recorded_with_its_reason_and_three_in_a_row_stop_the_tune(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = await two_step_workers(start_workers)
    space = "reward.function: {categorical: [math, 'no_such_module:score']}\n"
    job = tune_job(tmp_path, [worker], space, trials=6, subset=2)
    bad, good = {"reward.function": "no_such_module:score"}, {"reward.function": "math"}
    async with Tuner(job, Outcomes()) as tuner:
        for params in (bad, good, bad, bad, bad, good):
            tuner.study.enqueue_trial(params)
        with pytest.raises(ConfigError, match="3 trials in a row failed, the last because"):
            await tuner.search()
        trials = tuner.study.trials
    state = optuna_module().trial.TrialState
    assert [t.state for t in trials[:5]] == [state.FAIL, state.COMPLETE, *[state.FAIL] * 3]
    assert "no_such_module" in trials[0].user_attrs[FAILURE]
    assert trials[1].value == 1.0


async def test_a_tune_directory_whose_study_is_not_one_is_refused_by_name(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = await two_step_workers(start_workers)
    job = tune_job(tmp_path, [worker], TURNS, trials=1)
    job.tune_dir.mkdir()
    (job.tune_dir / "study.db").write_bytes(b"not a database")
    with pytest.raises(ConfigError, match="cannot be read as an Optuna study"):
        async with Tuner(job, Outcomes()):
            pass
    assert (job.tune_dir / "study.db").read_bytes() == b"not a database"


async def test_trials_the_workers_fail_are_failed_for_that_reason_never_scored_zero(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = await two_step_workers(start_workers, error_status=500)
    job = tune_job(
        tmp_path, [worker], TURNS, trials=3, subset=2, settings=("proxy.retry.max_retries=0",)
    )
    async with Tuner(job, Outcomes()) as tuner:
        with pytest.raises(ConfigError, match="3 trials in a row failed"):
            await tuner.search()
        trials = tuner.study.trials
    state = optuna_module().trial.TrialState
    assert [t.state for t in trials] == [state.FAIL] * 3
    assert all("ended unscored (infrastructure)" in t.user_attrs[FAILURE] for t in trials)
    assert all(t.values is None for t in trials)  # no score of 0 told to the sampler
