"""The run configuration: pydantic models, YAML files, flags and dotted overrides, in that order.

Precedence: defaults < the YAML file < command-line flags < `a.b=value` overrides.
"""

from __future__ import annotations

import difflib
import time
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agent_eval.agents.base import Sampling
from agent_eval.backends import WorkerConfig
from agent_eval.errors import ConfigError
from agent_eval.launch import LaunchConfig, SchedulerName
from agent_eval.overrides import apply_overrides
from agent_eval.proxy.config import ProxyConfig
from agent_eval.schedulers.config import RayConfig, SlurmConfig

CONFIG_FILE = "config.yaml"
DEFAULT_DATASETS = {"math_calculator": "gsm8k_mini", "multi_turn_chat": "sessions_mini"}


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AgentSection(Section):
    """Which runner plays the attempts, and its own settings."""

    name: str = Field(
        "math_calculator", description="Built-in name, package.module:Class or entry point."
    )
    max_turns: int | None = Field(None, ge=1, description="Model calls an attempt may make.")
    api: Literal["chat_completions", "responses"] | None = Field(
        None, description="OpenAI API the built-in agents use."
    )
    options: dict[str, Any] = Field(
        default_factory=dict, description="More keyword arguments for the runner's constructor."
    )

    def runner_options(self) -> dict[str, Any]:
        """Constructor arguments: the options, plus max_turns and api where set."""
        named = {"max_turns": self.max_turns, "api": self.api}
        return {**{k: v for k, v in named.items() if v is not None}, **self.options}


class DatasetSection(Section):
    """What the attempts are played on."""

    name: str | None = Field(
        None, description="gsm8k, gsm8k_mini, sessions_mini or a .jsonl/.parquet path."
    )
    path: Path | None = Field(None, description="Local file for a named dataset (e.g. gsm8k).")
    limit: int | None = Field(None, ge=0, description="Use only the first N samples.")


class ModelSection(Section):
    """The model under evaluation."""

    path: str | None = Field(
        None, description="Checkpoint path or hub id; llamacpp: a .gguf (default: embedded)."
    )
    name: str | None = Field(
        None, description="Name in requests; default: the served name, or the endpoint's first."
    )
    context_length: int | None = Field(None, ge=1, description="Longest context, in tokens.")


class RolloutSection(Section):
    """The inference workers: launched from an allocation, or existing endpoints."""

    backend: str = Field("llamacpp:d2", description="Allocation, e.g. sglang:d4p1t1.")
    endpoints: list[str] = Field(
        default_factory=list, description="URLs of running servers; nothing is launched."
    )
    worker: WorkerConfig = Field(default_factory=WorkerConfig)


class SchedulerSection(Section):
    """Where launched workers run."""

    type: SchedulerName = "local"
    ray: RayConfig = Field(default_factory=RayConfig)
    slurm: SlurmConfig = Field(default_factory=SlurmConfig)


class EvalSection(Section):
    """How many attempts, how many at once, and how long each may take."""

    n_samples: int = Field(1, ge=1, description="Attempts per sample.")
    concurrency: int = Field(8, ge=1, description="Attempts in flight at once, per process.")
    processes: int = Field(
        1,
        ge=1,
        description="Engine processes; each plays the samples whose id hashes to it. "
        "One process drives about 60 model calls/s.",
    )
    seed: int = Field(0, description="Run seed; each attempt's seed derives from it.")
    attempt_timeout: float = Field(600.0, gt=0, description="Seconds one attempt may take.")
    ks: list[int] | None = Field(
        None, description="k values of pass@k, pass^k, maj@k; default 1 and n_samples."
    )

    def k_values(self) -> tuple[int, ...]:
        """The k values, none above n_samples."""
        chosen = self.ks if self.ks is not None else [1, self.n_samples]
        return tuple(sorted({k for k in chosen if k <= self.n_samples}))


class SamplingSection(Section):
    """Sampling settings of every model call."""

    temperature: float = Field(0.0, ge=0, description="Sampling temperature.")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling mass.")
    max_tokens: int = Field(512, ge=1, description="Most tokens per model call.")


class RewardSection(Section):
    """How answers are scored."""

    function: str = Field("math", description="math, or package.module:function.")
    timeout: float = Field(10.0, gt=0, description="Seconds to score one answer.")
    workers: int | None = Field(
        None, ge=1, description="Scoring processes, shared by engine processes (default: up to 4)."
    )


class RunProxyConfig(ProxyConfig):
    """The proxy of a run: as `agent-eval serve` takes it, on a free port unless told."""

    port: int = Field(0, ge=0, le=65535, description="0 picks a free port.")


class OutputSection(Section):
    """Where the run's files go."""

    dir: Path | None = Field(None, description="Run directory; default runs/AGENT-TIME.")
    record: bool = Field(False, description="Keep every model exchange under RUN_DIR/exchanges.")


class WatchSection(Section):
    """Checkpoint watching: the probe on every checkpoint, the trigger for a full evaluation."""

    probe_size: int = Field(16, ge=1, description="Samples in the probe run on each checkpoint.")
    threshold: float | None = Field(
        None, gt=0, description="Probe change that triggers a full evaluation (default: 3 SE)."
    )
    alpha: float = Field(0.2, gt=0, le=1, description="Smoothing of the probe score (1: none).")
    max_steps: int | None = Field(
        None, ge=1, description="A full evaluation at least every N training steps."
    )
    max_seconds: float | None = Field(
        None, gt=0, description="A full evaluation at least every N seconds."
    )
    min_gap_steps: int = Field(0, ge=0, description="Steps between change-triggered evaluations.")
    poll_interval: float = Field(30.0, gt=0, description="Seconds between looks for checkpoints.")
    settle_seconds: float = Field(
        30.0, ge=0, description="A checkpoint counts once its files are unchanged this long."
    )
    stop_after: int | None = Field(
        None, ge=1, description="Stop after N checkpoints (default: until Ctrl-C)."
    )


class RunConfig(Section):
    """Everything one `agent-eval run` needs; saved beside its results."""

    agent: AgentSection = Field(default_factory=AgentSection)
    dataset: DatasetSection = Field(default_factory=DatasetSection)
    model: ModelSection = Field(default_factory=ModelSection)
    rollout: RolloutSection = Field(default_factory=RolloutSection)
    scheduler: SchedulerSection = Field(default_factory=SchedulerSection)
    eval: EvalSection = Field(default_factory=EvalSection)
    sampling: SamplingSection = Field(default_factory=SamplingSection)
    reward: RewardSection = Field(default_factory=RewardSection)
    proxy: RunProxyConfig = Field(default_factory=RunProxyConfig)
    output: OutputSection = Field(default_factory=OutputSection)
    watch: WatchSection = Field(default_factory=WatchSection)

    @model_validator(mode="after")
    def _endpoints_mean_external(self) -> RunConfig:
        # Endpoints without a backend named explicitly: serve those, launch nothing.
        if self.rollout.endpoints and "backend" not in self.rollout.model_fields_set:
            self.rollout.backend = "external"
        return self

    @property
    def dataset_name(self) -> str:
        """The dataset given, else the agent's own sample set."""
        return self.dataset.name or DEFAULT_DATASETS.get(self.agent.name, "gsm8k_mini")

    @property
    def run_dir(self) -> Path:
        """The run directory (fixed when the config is loaded)."""
        assert self.output.dir is not None, "load_run_config names the run directory"
        return self.output.dir

    def launch_config(self) -> LaunchConfig:
        """What the scheduler needs: the model section folded into the worker settings."""
        model = {
            "model": self.model.path,
            "served_model_name": self.model.name,
            "context_length": self.model.context_length,
        }
        worker = self.rollout.worker.model_copy(
            update={k: v for k, v in model.items() if v is not None}
        )
        return LaunchConfig(
            backend=self.rollout.backend,
            scheduler=self.scheduler.type,
            endpoints=self.rollout.endpoints,
            worker=worker,
            ray=self.scheduler.ray,
            slurm=self.scheduler.slurm,
        )

    def sampling_settings(self) -> Sampling:
        """The runners' sampling settings."""
        return Sampling(**self.sampling.model_dump())


def load_run_config(path: Path | None, flags: dict[str, Any], overrides: list[str]) -> RunConfig:
    """Defaults, then the YAML file, then flags (dotted keys), then `a.b=value` overrides."""
    data = _read_yaml(path) if path is not None else {}
    for key, value in flags.items():
        if value is not None:
            _set(data, key.split("."), value)
    data = apply_overrides(RunConfig, data, overrides)
    try:
        config = RunConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_explain(exc, path)) from None
    if config.output.dir is None:
        config.output.dir = _default_run_dir(config.agent.name)
    return config


def save_run_config(config: RunConfig, run_dir: Path) -> Path:
    """The resolved config as YAML in the run directory (made if needed); keys are masked."""
    run_dir.mkdir(parents=True, exist_ok=True)
    target = run_dir / CONFIG_FILE
    target.write_text(yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False))
    return target


def _default_run_dir(agent: str) -> Path:
    # Agent names can be module paths: keep the folder name to safe characters.
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in agent)
    return Path("runs") / f"{safe}-{time.strftime('%Y%m%d-%H%M%S')}"


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist; check the path") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} is not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping of settings, not {data!r}")
    return data


def _set(data: dict[str, Any], path: list[str], value: Any) -> None:
    for part in path[:-1]:
        data = data.setdefault(part, {})
    data[path[-1]] = value


def _explain(exc: ValidationError, path: Path | None) -> str:
    """One part per problem, naming the key and, for an unknown key, the nearest valid one."""
    problems = []
    for error in exc.errors():
        key = ".".join(str(part) for part in error["loc"])
        if error["type"] == "extra_forbidden":
            # Flags and overrides are checked as they are set: only a file brings unknown keys.
            problems.append(f"unknown setting {key!r} in {path}{_nearest(error['loc'])}")
        else:
            problems.append(f"{key}: {error['msg']} (got {error['input']!r})")
    return "; ".join(problems)


def _nearest(loc: tuple[Any, ...]) -> str:
    model: Any = RunConfig
    for part in loc[:-1]:
        field = model.model_fields.get(str(part)) if isinstance(model, type) else None
        model = field.annotation if field is not None else None
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return ""
    close = difflib.get_close_matches(str(loc[-1]), model.model_fields, n=1)
    prefix = ".".join(str(part) for part in loc[:-1])
    return f"; did you mean {'.'.join(filter(None, [prefix, close[0]]))!r}?" if close else ""
