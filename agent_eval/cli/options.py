"""Every settings flag of every command, in one table: the flag, its dotted key, its panel.

A flag's help and shown default come from the config field its key names, and
`settings_given` turns the flags a command was given into dotted keys, so `run`, `watch`,
`serve` and `workers up` share flags and keys (`agent-eval run eval.seed=3` is `--seed 3`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import typer
from pydantic import BaseModel

from agent_eval.launch.config import ServeConfig
from agent_eval.run.config import RunConfig
from agent_eval.settings import field_of
from agent_eval.system.credentials import VARIABLES

WHAT, WHERE, HOW, WHEN = "What to evaluate", "Where the model runs", "How", "When to evaluate"
PROXY, HEALTH, RETRIES, LIMITS, SECURITY = (
    "Proxy",
    "Health",
    "Retries and timeouts",
    "Limits",
    "Security",
)


@dataclass(frozen=True)
class Flag:
    """One command-line flag and the setting it gives."""

    key: str
    names: tuple[str, ...]
    panel: str


def _flag(key: str, panel: str, *names: str) -> Flag:
    return Flag(key, names, panel)


FLAGS: dict[str, Flag] = {
    "agent": _flag("agent.name", WHAT, "--agent", "-a"),
    "dataset": _flag("dataset.name", WHAT, "--dataset", "-d"),
    "data_file": _flag("dataset.path", WHAT, "--data-file"),
    "limit": _flag("dataset.limit", WHAT, "--limit"),
    "perturb": _flag("dataset.perturb", WHAT, "--perturb"),
    "backend": _flag("rollout.backend", WHERE, "--backend", "-b"),
    "model": _flag("model.path", WHERE, "--model", "-m"),
    "scheduler": _flag("scheduler.type", WHERE, "--scheduler"),
    "endpoint": _flag("rollout.endpoints", WHERE, "--endpoint", "-e"),
    "n_samples": _flag("eval.n_samples", HOW, "--n-samples", "-n"),
    "concurrency": _flag("eval.concurrency", HOW, "--concurrency", "-j"),
    "processes": _flag("eval.processes", HOW, "--processes", "-P"),
    "seed": _flag("eval.seed", HOW, "--seed"),
    "reproducible": _flag("rollout.reproducible", HOW, "--reproducible"),
    "temperature": _flag("sampling.temperature", HOW, "--temperature"),
    "run_dir": _flag("output.dir", HOW, "--run-dir", "-o"),
    "probe_size": _flag("watch.probe_size", WHEN, "--probe-size"),
    "threshold": _flag("watch.threshold", WHEN, "--threshold"),
    "max_steps": _flag("watch.max_steps", WHEN, "--max-steps"),
    "host": _flag("proxy.host", PROXY, "--host"),
    "port": _flag("proxy.port", PROXY, "--port"),
    "policy": _flag("proxy.policy", PROXY, "--policy"),
    # `run --processes` is the engine's: a run names the proxy's its own way.
    "serve_processes": _flag("proxy.processes", PROXY, "--processes"),
    "proxy_processes": _flag("proxy.processes", PROXY, "--proxy-processes"),
    "session_balance": _flag("proxy.policies.session.balance_factor", PROXY, "--session-balance"),
    "session_ttl": _flag("proxy.policies.session.ttl", PROXY, "--session-ttl"),
    "responses_store_capacity": _flag(
        "proxy.responses.store_capacity", PROXY, "--responses-store-capacity"
    ),
    "responses_store_ttl": _flag("proxy.responses.store_ttl", PROXY, "--responses-store-ttl"),
    "responses_store_bytes": _flag("proxy.responses.store_bytes", PROXY, "--responses-store-bytes"),
    "record": _flag("proxy.record_dir", PROXY, "--record"),
    "health_path": _flag("proxy.health.path", HEALTH, "--health-path"),
    "health_interval": _flag("proxy.health.interval", HEALTH, "--health-interval"),
    "health_timeout": _flag("proxy.health.timeout", HEALTH, "--health-timeout"),
    "failure_threshold": _flag("proxy.health.failure_threshold", HEALTH, "--failure-threshold"),
    "success_threshold": _flag("proxy.health.success_threshold", HEALTH, "--success-threshold"),
    "breaker_failures": _flag("proxy.health.breaker_failures", HEALTH, "--breaker-failures"),
    "breaker_cooldown": _flag("proxy.health.breaker_cooldown", HEALTH, "--breaker-cooldown"),
    "max_retries": _flag("proxy.retry.max_retries", RETRIES, "--max-retries"),
    "backoff_base": _flag("proxy.retry.backoff_base", RETRIES, "--backoff-base"),
    "backoff_max": _flag("proxy.retry.backoff_max", RETRIES, "--backoff-max"),
    "connect_timeout": _flag("proxy.timeouts.connect", RETRIES, "--connect-timeout"),
    "timeout": _flag("proxy.timeouts.total", RETRIES, "--timeout"),
    "stream_idle_timeout": _flag("proxy.timeouts.stream_idle", RETRIES, "--stream-idle-timeout"),
    # --attempt-timeout: its name before `attempt` was left to the engine's plays of a sample.
    "worker_timeout": _flag(
        "proxy.timeouts.worker", RETRIES, "--worker-timeout", "--attempt-timeout"
    ),
    "max_body_bytes": _flag("proxy.max_body_bytes", LIMITS, "--max-body-bytes"),
    "max_response_bytes": _flag("proxy.max_response_bytes", LIMITS, "--max-response-bytes"),
    "max_choices": _flag("proxy.limits.max_choices", LIMITS, "--max-choices"),
    "max_event_bytes": _flag("proxy.max_event_bytes", LIMITS, "--max-event-bytes"),
    "max_in_flight": _flag("proxy.limits.max_in_flight", LIMITS, "--max-in-flight"),
    "max_connections_per_worker": _flag(
        "proxy.limits.max_connections_per_worker", LIMITS, "--max-connections-per-worker"
    ),
    "client_timeout": _flag("proxy.limits.client_timeout", LIMITS, "--client-timeout"),
    "api_key": _flag("proxy.api_key", SECURITY, "--api-key"),
    "worker_api_key": _flag("proxy.worker_api_key", SECURITY, "--worker-api-key"),
    "admin_token": _flag("proxy.admin_token", SECURITY, "--admin-token"),
}


def option(name: str, panel: str | None = None) -> Any:
    """The typer option of flag `name`, its help from the config field its key names."""
    flag = FLAGS[name]
    return typer.Option(
        *flag.names,
        help=_field(flag).description,
        rich_help_panel=panel or flag.panel,
        envvar=VARIABLES.get(flag.key.removeprefix("proxy.")),
    )


def default(name: str) -> Any:
    """The config's default of flag `name`, for help to show; only a flag given sets it."""
    return _field(FLAGS[name]).get_default(call_default_factory=True)


def settings_given(ctx: typer.Context) -> dict[str, Any]:
    """The settings flags given on the command line or in the environment, by dotted key."""
    # By name: typer 0.29 vendors click, whose ParameterSource is not click's own.
    given = {"COMMANDLINE", "ENVIRONMENT"}
    return {
        FLAGS[name].key: value
        for name, value in ctx.params.items()
        if name in FLAGS and getattr(ctx.get_parameter_source(name), "name", None) in given
    }


def overrides_argument(example: str) -> Any:
    """The `key=value ...` argument every command takes, after its flags."""
    return typer.Argument(
        help=f"Any setting as key=value, e.g. {example} (see configs/ for every key).",
        show_default=False,
    )


def _field(flag: Flag) -> Any:
    # `serve` shows the proxy's own defaults (port 8000); a run's proxy takes a free port.
    root: type[BaseModel] = ServeConfig if flag.key.startswith("proxy.") else RunConfig
    return field_of(root, flag.key)
