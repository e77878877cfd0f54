"""The search space and objectives of `agent-eval tune`: read, checked, refused with a reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_eval.errors import ConfigError
from agent_eval.metrics.objectives import Objective, metric_paths, parse_objectives
from agent_eval.run.config import load_run_config
from agent_eval.tune.space import SearchSpace
from agent_eval.tune.study_files import optuna_module
from agent_eval.tune.trials import final_config, trial_config

CONFIGS = Path(__file__).parents[1] / "configs"


def space_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "space.yaml"
    path.write_text(text)
    return path


def test_the_shipped_space_loads_and_each_kind_draws_inside_its_range(tmp_path: Path) -> None:
    space = SearchSpace.load(CONFIGS / "tune" / "space.yaml")
    optuna = optuna_module()
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    for _ in range(30):
        drawn = space.suggest(study.ask())
        assert 0.0 <= drawn["sampling.temperature"] <= 1.2
        assert 64 <= drawn["sampling.max_tokens"] <= 1024
        assert isinstance(drawn["sampling.max_tokens"], int)
        assert drawn["proxy.policy"] in ("session", "round_robin")
    assert space.as_written()["sampling.max_tokens"] == {"int": [64, 1024], "log": True}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("sampling.temprature: {float: [0, 1]}", "did you mean 'sampling.temperature'"),
        ("sampling.temperature: {float: [1, 1]}", "[1.0, 1.0] is empty"),
        ("sampling.temperature: {float: [1, 0]}", "is empty: low must be below high"),
        ("sampling.max_tokens: {int: [0, 64], log: true}", "log: true needs a low above 0"),
        ("proxy.policy: {categorical: [session]}", "at least two choices"),
        ("sampling.temperature: {uniform: [0, 1]}", "unknown field 'uniform'"),
        ("sampling.temperature: {float: [0, 1], int: [0, 1]}", "give one of"),
        ("sampling.temperature: 0.5", "must map to a distribution"),
        ("output.dir: {categorical: [a, b]}", "set by the tune for each trial"),
        ("dataset.subset: {int: [1, 9]}", "set by the tune for each trial"),
        ("", "names no setting to search"),
    ],
)
def test_a_bad_space_is_refused_naming_the_setting_and_the_fix(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=None) as refused:
        SearchSpace.load(space_file(tmp_path, text))
    assert message in str(refused.value)


def test_corners_are_each_setting_at_its_ends_and_choices(tmp_path: Path) -> None:
    text = "sampling.temperature: {float: [0.0, 1.2]}\nproxy.policy: {categorical: [a, b, c]}\n"
    corners = SearchSpace.load(space_file(tmp_path, text)).corners()
    assert corners == [
        {"sampling.temperature": 0.0},
        {"sampling.temperature": 1.2},
        {"proxy.policy": "a"},
        {"proxy.policy": "b"},
        {"proxy.policy": "c"},
    ]


def test_a_trial_config_lays_the_values_over_the_base_and_the_final_one_drops_the_subset(
    tmp_path: Path,
) -> None:
    base = load_run_config(None, {"dataset.name": "word_problems"}, ["eval.n_samples=3"])
    values = {"sampling.temperature": 0.7, "agent.options.tool_use": "stop_on_first_tool"}
    trial = trial_config(base, values, tmp_path / "trial-3", 20)
    assert trial.sampling.temperature == 0.7 and trial.eval.n_samples == 3
    assert trial.agent.options == {"tool_use": "stop_on_first_tool"}
    assert trial.dataset.subset == 20 and trial.run_dir == tmp_path / "trial-3"
    final = final_config(base, values)
    assert final.dataset.subset is None and final.sampling.temperature == 0.7
    assert final.output.dir is None
    assert base.sampling.temperature == 0.0  # the base is left as it was


def test_objectives_take_summary_metrics_with_their_directions() -> None:
    parsed = parse_objectives(
        ["quality.accuracy", "efficiency.tokens.mean_completion", "quality.pass_at_k.4:min"],
        (1, 4),
    )
    assert parsed == [
        Objective("quality.accuracy", "maximize"),
        Objective("efficiency.tokens.mean_completion", "minimize"),
        Objective("quality.pass_at_k.4", "minimize"),
    ]
    assert parse_objectives([], (1,)) == [Objective("quality.accuracy", "maximize")]
    assert parse_objectives(["efficiency.throughput.wall_time_s"], (1,))[0].direction == (
        "minimize"
    )
    assert "quality.pass_at_k.4" not in set(metric_paths((1,)))


def test_robustness_objectives_take_their_group_directions_and_by_kind_is_no_objective() -> None:
    parsed = parse_objectives(
        ["robustness.original_accuracy", "robustness.robust_accuracy", "robustness.flip_rate"],
        (1,),
    )
    assert [objective.direction for objective in parsed] == ["maximize", "maximize", "minimize"]
    # A kind's drop, broke count or p-value is better low, not high as the group's by_kind says.
    for leaf in ("accuracy", "drop", "skipped", "broke", "mcnemar_p"):
        with pytest.raises(ConfigError, match="is not a metric"):
            parse_objectives([f"robustness.by_kind.numbers.{leaf}"], (1,))
    assert "stability.flip_rate" not in set(metric_paths((1,)))


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        (["efficiency.tokens.completion_mean:min"], "is not a metric of summary.json"),
        (["quality.acuracy"], "did you mean 'quality.accuracy'"),
        (["quality.accuracy:up"], "end it with :max or :min"),
        (["quality.accuracy", "quality.accuracy:max"], "names a metric twice"),
        (["quality.pass_at_k.8"], "is not a metric"),
    ],
)
def test_a_bad_objective_is_refused(specs: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_objectives(specs, (1, 4))
    assert message in str(refused.value)


def test_an_objective_reads_estimates_plain_numbers_and_missing_figures() -> None:
    summary = {
        "quality": {"accuracy": {"value": 0.75, "low": 0.5}, "pass_at_k": {"4": 0.9}},
        "stability": {"consistency": None},
    }
    assert Objective("quality.accuracy", "maximize").value(summary) == 0.75
    assert Objective("quality.pass_at_k.4", "maximize").value(summary) == 0.9
    assert Objective("stability.consistency", "maximize").value(summary) is None
    assert Objective("quality.accuracy", "minimize").better(0.2, 0.3)
