"""Each trial's run config: the base config with the trial's values, on the tune's subset."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from agent_eval.run.config import RunConfig
from agent_eval.run.evaluation import resolved_config
from agent_eval.settings import validated, with_values


def trial_config(
    base: RunConfig, params: Mapping[str, Any], run_dir: Path, subset: int | None
) -> RunConfig:
    """The config of one trial: `params` over `base`, played in `run_dir` on `subset` samples."""
    return _with(base, {**params, "output.dir": run_dir, "dataset.subset": subset})


def final_config(base: RunConfig, params: Mapping[str, Any]) -> RunConfig:
    """`params` over `base` on the base's whole dataset, for `agent-eval run --config`."""
    return _with(base, {**params, "output.dir": None})


def write_config(config: RunConfig, target: Path, header: str) -> None:
    """A complete run config (every default named), with `header` as a YAML comment on top."""
    settings = resolved_config(config).model_dump(mode="json")
    comment = "".join(f"# {line}\n" for line in header.splitlines())
    target.write_text(comment + yaml.safe_dump(settings, sort_keys=False))


def settings_text(params: Mapping[str, Any]) -> str:
    """`sampling.temperature=0.31, proxy.policy='session'`: a trial's settings in one line."""
    return ", ".join(f"{key}={_shown(value)}" for key, value in params.items())


def _shown(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else repr(value)


def _with(base: RunConfig, values: Mapping[str, Any]) -> RunConfig:
    data = base.model_dump(exclude_unset=True)
    return validated(RunConfig, with_values(RunConfig, data, dict(values)))
