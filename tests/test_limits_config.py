"""eval.limits and eval.prices as a run's config takes them: checked, each error naming the
setting and what to do; the limits' old names in a saved config still read."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_eval.errors import ConfigError
from agent_eval.proxy.capture.attempt import Price
from agent_eval.run.config import RunConfig, load_run_config
from agent_eval.run.limits import Limits
from agent_eval.run.parts import attempt_limits


def _config(*overrides: str, path: Path | None = None) -> RunConfig:
    return load_run_config(path, {}, list(overrides))


def test_the_limits_and_the_models_price_reach_the_engine() -> None:
    config = _config(
        "eval.limits.wall_time=60", "eval.limits.working_time=30", "eval.limits.tokens=5000",
        "eval.limits.model_calls=8", "eval.limits.cost=0.02",
        "eval.prices.m.prompt=0.15", "eval.prices.m.completion=0.6",
    )  # fmt: skip
    limits = attempt_limits(config, "m")
    assert limits == Limits(60, 30, 5000, 8, 0.02, Price(0.15, 0.6))
    assert limits.price is not None and limits.price.of(1_000_000, 1_000_000) == pytest.approx(0.75)


def test_no_limit_is_the_default() -> None:
    assert not attempt_limits(_config(), "m")


@pytest.mark.parametrize("name", ["wall_time", "working_time"])
def test_a_time_limit_past_the_attempt_timeout_is_refused(name: str) -> None:
    with pytest.raises(ConfigError, match=rf"eval.limits.{name}=900 .*eval.attempt_timeout=600"):
        _config(f"eval.limits.{name}=900")
    assert _config(f"eval.limits.{name}=900", "eval.attempt_timeout=900").eval.limits


def test_a_cost_limit_needs_prices_and_the_runs_model_among_them() -> None:
    with pytest.raises(ConfigError, match=r"eval\.limits\.cost needs eval\.prices"):
        _config("eval.limits.cost=1")
    config = _config(
        "eval.limits.cost=1", "eval.prices.other.prompt=1", "eval.prices.other.completion=2"
    )
    with pytest.raises(
        ConfigError, match=r"no price for the run's model 'm'.*eval\.prices\.m\.prompt"
    ):
        attempt_limits(config, "m")


@pytest.mark.parametrize(
    "setting", ["eval.limits.tokens=0", "eval.limits.cost=-1", "eval.limits.wall_time=0"]
)
def test_a_limit_of_nothing_is_refused_by_name(setting: str) -> None:
    with pytest.raises(ConfigError, match=setting.split("=")[0].replace(".", r"\.")):
        _config(setting)


def test_a_price_must_give_both_figures() -> None:
    with pytest.raises(ConfigError, match=r"eval\.prices\.m\.completion"):
        _config("eval.prices.m.prompt=1")


def test_a_saved_config_with_the_old_limit_names_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "eval:\n  max_calls: 3\n  max_attempt_tokens: 900\n  limits:\n    tokens: 800\n"
    )
    limits = _config(path=path).eval.limits
    # The new name given beside the old one wins.
    assert (limits.model_calls, limits.tokens) == (3, 800)
