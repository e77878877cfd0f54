"""The run configuration: pydantic models, YAML files, flags and dotted overrides, in that order.

Precedence: defaults < the YAML file < command-line flags < `a.b=value` overrides.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any, Literal, Self

import yaml
from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from agent_eval.agents.base import Sampling
from agent_eval.data.loaders import DATASETS
from agent_eval.errors import ConfigError
from agent_eval.launch.config import LaunchConfig, pick_token_fields, pin_routes
from agent_eval.perturb import PERTURBATIONS
from agent_eval.proxy.config import ProxyConfig
from agent_eval.results.files import RunDirectory
from agent_eval.seeds import SeedScope, seed_scope
from agent_eval.settings import Section, load_settings, renamed_keys
from agent_eval.system.credentials import VARIABLES

CONFIG_FILE = "config.yaml"
DEFAULT_DATASETS = {
    "math_calculator": "gsm8k_mini",
    "multi_turn_chat": "sessions_mini",
    "bfcl": "bfcl:simple",
    "agentdojo": "agentdojo:banking",
}
# A benchmark's runner is scored by its benchmark's own checker unless told otherwise.
DEFAULT_REWARDS = {"bfcl": "bfcl", "agentdojo": "agentdojo"}
# The first run's settings, when the calculator agent plays on the embedded model: a result
# that means something within minutes on a laptop. SmolLM2-135M picks a tool and its numbers
# but seldom stops calling tools, so its first tool's result is its answer, on problems one
# call settles; sampling and four attempts per problem let pass@k, pass^k and maj@k differ.
# A file, flag or override still sets any of them.
EMBEDDED_DEFAULT: dict[str, Any] = {
    "agent": {"max_turns": 2, "options": {"tool_use": "stop_on_first_tool"}},
    "dataset": {"name": "word_problems"},
    "eval": {"n_samples": 4},
    "sampling": {"temperature": 0.3, "max_tokens": 64},
}

_OLD_EVAL_KEYS = {"retries": "replays", "retry_backoff": "replay_backoff"}
"""Keys of `eval` under their old names, which files written before still hold."""


def _listed(value: Any) -> Any:
    """`numbers,names` (a flag or key=value) as the list a YAML file gives."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


def _known_perturbations(names: list[str]) -> list[str]:
    for name in names:
        PERTURBATIONS.check(name)
    if len(set(names)) != len(names):
        raise ValueError(f"a perturbation is named twice in {names}")
    return names


PerturbationNames = Annotated[
    list[str], BeforeValidator(_listed), AfterValidator(_known_perturbations)
]


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

    name: str | None = Field(None, description=f"{', '.join(DATASETS)} or a .jsonl/.parquet path.")
    path: Path | None = Field(None, description="Local file for a named dataset (e.g. gsm8k).")
    limit: int | None = Field(None, ge=0, description="Use only the first N samples.")
    perturb: PerturbationNames = Field(
        default_factory=list,
        description="Also play each sample's variants: numbers, names, distractor, mod:function.",
    )
    subset: int | None = Field(
        None, ge=1, description="Play N samples drawn at random, the same for the same eval.seed."
    )


class LimitsSection(Section):
    """What one attempt may spend; past any, it ends as limit_exceeded (the model's failure)."""

    wall_time: float | None = Field(
        None, gt=0, description="Seconds an attempt may take (at most eval.attempt_timeout)."
    )
    working_time: float | None = Field(
        None,
        gt=0,
        description="Seconds an attempt may take less those its model calls waited in the "
        "proxy for a free worker.",
    )
    tokens: int | None = Field(
        None, ge=1, description="Prompt and completion tokens an attempt's model calls may use."
    )
    model_calls: int | None = Field(None, ge=1, description="Model calls an attempt may make.")
    cost: float | None = Field(
        None, gt=0, description="What an attempt's tokens may cost, at eval.prices."
    )


class PriceSection(Section):
    """What a million tokens of one model cost."""

    prompt: float = Field(ge=0, description="Price of a million prompt tokens.")
    completion: float = Field(ge=0, description="Price of a million completion tokens.")


_OLD_LIMIT_KEYS = {"max_calls": "model_calls", "max_attempt_tokens": "tokens"}
"""Keys of `eval` that are now keys of `eval.limits`, which files written before still hold."""


def _moved_limits(data: Any) -> Any:
    """`eval` data with its old limit keys moved into `limits`; a new key given beside wins."""
    if not isinstance(data, dict) or not _OLD_LIMIT_KEYS.keys() & data.keys():
        return data
    moved = {new: data[old] for old, new in _OLD_LIMIT_KEYS.items() if data.get(old) is not None}
    limits = data.get("limits")
    given = limits if isinstance(limits, dict) else {}
    rest = {key: value for key, value in data.items() if key not in _OLD_LIMIT_KEYS}
    return {**rest, "limits": {**moved, **given}}


class EvalSection(Section):
    """How many attempts, how many at once, and how long each may take."""

    n_samples: int = Field(1, ge=1, description="Attempts per sample.")
    concurrency: int = Field(8, ge=1, description="Attempts in flight at once, per process.")
    concurrency_mode: Literal["fixed", "adaptive"] = Field(
        "fixed",
        description="fixed: eval.concurrency attempts at once; adaptive: start at 4, grow while "
        "latency stays near its floor, back off on 429/503 and on requests queued at the "
        "workers, never above eval.concurrency (each change in RUN_DIR/concurrency.jsonl).",
    )
    processes: int = Field(
        1,
        ge=1,
        description="Engine processes; each plays the samples whose id hashes to it. "
        "One process drives about 60 model calls/s.",
    )
    engine: Literal["local", "ray"] = Field(
        "local",
        description="Where the engine processes run: local (this machine) or ray (one actor "
        "each, spread over the nodes of scheduler.ray.address's cluster, or of a local one).",
    )
    seed: int = Field(0, description="Run seed; each attempt's seed derives from it.")
    attempt_timeout: float = Field(600.0, gt=0, description="Seconds one attempt may take.")
    replays: int = Field(
        3, ge=0, description="Replays of an attempt the infrastructure stopped (same seed)."
    )
    replay_backoff: float = Field(
        1.0, ge=0, description="Seconds before the first replay; doubling, with jitter."
    )
    max_unscored: float = Field(
        0.05,
        ge=0,
        le=1,
        description="Fraction of attempts that may end unscored; above it the run stops (exit 3).",
    )
    ks: list[int] | None = Field(
        None, description="k values of pass@k, pass^k, maj@k; default 1 and n_samples."
    )
    capture: bool = Field(
        False,
        description="Give every attempt a key of the proxy's, and keep the proxy's record of "
        "its calls as its trajectory (runners with uses_attempt_keys always get one).",
    )
    tokens: bool = Field(
        False,
        description="Keep every model call's prompt and completion token ids and logprobs in "
        "samples.jsonl (turns on eval.capture and the proxy's capture.tokens, in the fields "
        "the backend's server takes; an external endpoint's: proxy.capture.token_fields).",
    )
    limits: LimitsSection = Field(default_factory=LimitsSection)
    prices: dict[str, PriceSection] = Field(
        default_factory=dict,
        description="Token prices by model name, for eval.limits.cost: "
        "{MODEL: {prompt: X, completion: Y}}, each the price of a million tokens.",
    )

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        # Replays were once `retries`, the word the proxy's re-sends keep; the limits were
        # eval.max_calls and eval.max_attempt_tokens.
        return _moved_limits(renamed_keys(data, _OLD_EVAL_KEYS))

    @model_validator(mode="after")
    def _limits_fit(self) -> Self:
        """A time limit past attempt_timeout would never be reached; a cost needs prices."""
        limits = self.limits
        for name in ("wall_time", "working_time"):
            value = getattr(limits, name)
            if value is not None and value > self.attempt_timeout:
                raise ValueError(
                    f"eval.limits.{name}={value:g} is longer than eval.attempt_timeout="
                    f"{self.attempt_timeout:g}, which would stop the attempt first, as the "
                    f"infrastructure's timeout: raise eval.attempt_timeout to at least {value:g}"
                )
        if limits.cost is not None and not self.prices:
            raise ValueError(
                "eval.limits.cost needs eval.prices: the price of a million prompt and "
                "completion tokens of the run's model, e.g. eval.prices.MODEL.prompt=0.15"
            )
        return self

    def price(self, model: str) -> PriceSection | None:
        """The price of `model`'s tokens; None without eval.limits.cost.

        Raises: ConfigError when eval.limits.cost is set and eval.prices has no `model`."""
        if self.limits.cost is None:
            return None
        if model not in self.prices:
            known = ", ".join(sorted(self.prices))
            raise ConfigError(
                f"eval.limits.cost is set but eval.prices has no price for the run's model "
                f"{model!r} (it prices: {known}); add eval.prices.{model}.prompt and .completion"
            )
        return self.prices[model]

    def k_values(self) -> tuple[int, ...]:
        """The k values, none above n_samples."""
        chosen = self.ks if self.ks is not None else [1, self.n_samples]
        return tuple(sorted({k for k in chosen if k <= self.n_samples}))


class RewardSection(Section):
    """How answers are scored."""

    function: str = Field(
        "math", description="math, package.module:function or entry point (agent_eval.rewards)."
    )
    timeout: float = Field(10.0, gt=0, description="Seconds to score one answer.")
    workers: int | None = Field(
        None, ge=1, description="Scoring processes, shared by engine processes (default: up to 4)."
    )
    start_timeout: float = Field(
        60.0,
        gt=0,
        description="Seconds the scoring processes may take to start (each imports the reward's "
        "module; AgentDojo's takes seconds of CPU, more on a busy machine).",
    )


class RunProxyConfig(ProxyConfig):
    """The proxy of a run: as `agent-eval serve` takes it, on a free port unless told."""

    port: int = Field(0, ge=0, le=65535, description="0 picks a free port.")


class OutputSection(Section):
    """Where the run's files go."""

    dir: Path | None = Field(None, description="Run directory; default runs/AGENT-TIME.")
    record: bool = Field(False, description="Keep every model exchange under RUN_DIR/exchanges.")


THRESHOLD_ONLY = frozenset({"threshold", "alpha", "max_steps", "max_seconds", "min_gap_steps"})
BOUNDED_ONLY = frozenset({"delta", "max_delay_steps", "check_size", "error_rate", "jitter"})


class WatchSection(Section):
    """Checkpoint watching: the probe on every checkpoint, the trigger for a full evaluation."""

    trigger: Literal["bounded", "threshold"] = Field(
        "bounded",
        description="bounded: paired sequential probes, no change of `delta` waits past "
        "`max_delay_steps`; threshold: a smoothed probe score against `threshold`.",
    )
    probe_size: int = Field(
        50, ge=1, description="Samples the probe on each checkpoint plays (at most, if bounded)."
    )
    delta: float = Field(
        0.1, gt=0, lt=1, description="bounded: the smallest change worth a full evaluation."
    )
    max_delay_steps: int = Field(
        500, ge=1, description="bounded: the most training steps a change of `delta` may wait."
    )
    check_size: int = Field(
        1000, ge=1, description="bounded: samples a check plays at most to rule a change out."
    )
    error_rate: float = Field(
        0.05, gt=0, lt=1, description="bounded: each comparison's chance of a wrong verdict."
    )
    jitter: float = Field(
        0.01,
        ge=0,
        lt=1,
        description="bounded: how far one checkpoint's accuracy strays from the learning "
        "curve's trend (standard deviation); a check keeps this much in hand.",
    )
    threshold: float | None = Field(
        None, gt=0, description="threshold: probe change that fires (default: 3 SE)."
    )
    alpha: float = Field(
        0.2, gt=0, le=1, description="threshold: smoothing of the probe score (1: none)."
    )
    max_steps: int | None = Field(
        None, ge=1, description="threshold: a full evaluation at least every N training steps."
    )
    max_seconds: float | None = Field(
        None, gt=0, description="threshold: a full evaluation at least every N seconds."
    )
    min_gap_steps: int = Field(
        0, ge=0, description="threshold: steps between change-triggered evaluations."
    )

    @model_validator(mode="after")
    def _settings_of_the_trigger_chosen(self) -> Self:
        """A setting of the other trigger, changed from its default, would be silently unused:
        refuse it, naming both."""
        other = THRESHOLD_ONLY if self.trigger == "bounded" else BOUNDED_ONLY
        # By value, not by being set: a saved resolved config sets every key to its default.
        fields = type(self).model_fields
        stray = sorted(name for name in other if getattr(self, name) != fields[name].default)
        if stray:
            names = ", ".join(f"watch.{name}" for name in stray)
            wanted = "threshold" if self.trigger == "bounded" else "bounded"
            raise ValueError(
                f"{names} only applies with watch.trigger={wanted} (this watch uses "
                f"{self.trigger}): set watch.trigger={wanted}, or leave {names} out"
            )
        return self

    @model_validator(mode="after")
    def _jitter_under_delta(self) -> Self:
        """Refuse a jitter that leaves a check nothing to rule out, before the watch starts (a
        probe larger than a check is not refused: the watch plays it at the check's size)."""
        if self.trigger == "bounded" and self.jitter >= self.delta:
            raise ValueError(
                f"watch.jitter {self.jitter:g} must be less than watch.delta {self.delta:g}: "
                "give e.g. watch.jitter=0.01"
            )
        return self

    poll_interval: float = Field(30.0, gt=0, description="Seconds between looks for checkpoints.")
    settle_seconds: float = Field(
        30.0, ge=0, description="A checkpoint counts once its files are unchanged this long."
    )
    stop_after: int | None = Field(
        None, ge=1, description="Stop after N checkpoints (default: until Ctrl-C)."
    )


class RunConfig(LaunchConfig):
    """Everything one `agent-eval run` needs; saved beside its results."""

    agent: AgentSection = Field(default_factory=AgentSection)
    dataset: DatasetSection = Field(default_factory=DatasetSection)
    eval: EvalSection = Field(default_factory=EvalSection)
    sampling: Sampling = Field(default_factory=Sampling)
    reward: RewardSection = Field(default_factory=RewardSection)
    proxy: RunProxyConfig = Field(default_factory=RunProxyConfig)
    output: OutputSection = Field(default_factory=OutputSection)
    watch: WatchSection = Field(default_factory=WatchSection)

    @model_validator(mode="after")
    def _fixed_routes_when_reproducible(self) -> Self:
        pin_routes(self.rollout, self.proxy)
        return self

    @model_validator(mode="after")
    def _tokens_are_captured(self) -> Self:
        """eval.tokens: every attempt keyed, its calls' tokens asked for in the backend's
        fields unless proxy.capture.token_fields says whose."""
        if self.eval.tokens:
            self.eval.capture = True
            self.proxy.capture.tokens = True
        if self.proxy.capture.tokens:
            pick_token_fields(self, self.proxy)
        return self

    @model_validator(mode="after")
    def _benchmark_reward_by_default(self) -> Self:
        chosen = "function" in self.reward.model_fields_set
        if not chosen and self.agent.name in DEFAULT_REWARDS:
            self.reward.function = DEFAULT_REWARDS[self.agent.name]
        return self

    @property
    def dataset_name(self) -> str:
        """The dataset given, else the agent's own sample set."""
        return self.dataset.name or DEFAULT_DATASETS.get(self.agent.name, "gsm8k_mini")

    def on_embedded_model(self) -> bool:
        """Whether the calculator agent plays on the embedded model: the first run's setup."""
        return (
            self.agent.name == "math_calculator"
            and self.allocation().backend == "llamacpp"
            and self.worker().model is None
        )

    def seed_scope(self) -> SeedScope:
        """What eval.seed fixes on this run's backend, and what may still vary."""
        return seed_scope(self.eval.seed, self.allocation().backend, self.rollout.reproducible)

    @property
    def run_dir(self) -> Path:
        """The run directory (fixed when the config is loaded)."""
        assert self.output.dir is not None, "load_run_config names the run directory"
        return self.output.dir


def load_run_config(
    path: Path | None, flags: dict[str, Any], overrides: list[str], embedded_default: bool = False
) -> RunConfig:
    """Defaults, then the YAML file, then flags (dotted keys), then `a.b=value` overrides.

    With `embedded_default` (a run, not a watch), the calculator agent on the embedded model
    takes EMBEDDED_DEFAULT's settings for those not given."""
    config = load_settings(RunConfig, path, flags, overrides)
    if embedded_default and config.on_embedded_model():
        config = load_settings(RunConfig, path, flags, overrides, preset=EMBEDDED_DEFAULT)
    if config.output.dir is None:
        config.output.dir = default_run_dir(config.agent.name)
    return config


def save_run_config(config: RunConfig, run_dir: Path) -> Path:
    """The resolved config as YAML in the run directory (made if needed), without its keys.

    Left out, not masked: a resume or a run from it reads the file back, and would take a mask
    for the key; without one, it takes the keys from the environment as the first run did.
    Written whole or not at all: `--resume` reads it."""
    directory = RunDirectory(run_dir)
    directory.create()
    data = config.model_dump(mode="json", exclude={"proxy": set(VARIABLES)})
    return directory.write_text(CONFIG_FILE, yaml.safe_dump(data, sort_keys=False))


def safe_name(name: str) -> str:
    """`name` fit for a folder name: a module path's dots and colons become dashes."""
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in name)


def default_run_dir(name: str) -> Path:
    """runs/NAME-TIME: a new folder for each run (or tune) made without -o."""
    return Path("runs") / f"{safe_name(name)}-{time.strftime('%Y%m%d-%H%M%S')}"
