"""`agent-eval serve` and `agent-eval workers up`: the proxy, launched workers, or both."""

from __future__ import annotations

import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from agent_eval.allocation import Allocation
from agent_eval.backends import get_backend
from agent_eval.cli import app
from agent_eval.cli.common import WaitReporter, console, flag, guarded, validated
from agent_eval.cli.serve_screen import ServeScreen
from agent_eval.launch import LaunchConfig, WorkerEndpoint, hold_workers, serve_over_workers
from agent_eval.lifecycle import run_until_signalled
from agent_eval.overrides import apply_overrides
from agent_eval.proxy.auth import save_admin_token
from agent_eval.proxy.config import (
    HealthConfig,
    LimitsConfig,
    PolicyName,
    ProxyConfig,
    ResponsesConfig,
    RetryConfig,
    SessionConfig,
    TimeoutConfig,
)
from agent_eval.proxy.server import serve_forever

PROXY, WORKERS, HEALTH, RETRIES, LIMITS, SECURITY = (
    "Proxy",
    "Workers",
    "Health",
    "Retries and timeouts",
    "Limits",
    "Security",
)
_P, _H, _R, _T, _S = ProxyConfig(), HealthConfig(), RetryConfig(), TimeoutConfig(), SessionConfig()
_RS, _L = ResponsesConfig(), LimitsConfig()


BackendOption = Annotated[
    str | None,
    typer.Option(
        "--backend",
        "-b",
        help="Workers to launch: backend:sizes, e.g. llamacpp:d2 or sglang:d4t2.",
        rich_help_panel=WORKERS,
    ),
]
ModelOption = Annotated[
    str | None,
    typer.Option(help="Model path or hub id (llamacpp: a .gguf file).", rich_help_panel=WORKERS),
]
SchedulerOption = Annotated[
    str, typer.Option(help="Where workers run: local, ray or slurm.", rich_help_panel=WORKERS)
]
RunDirOption = Annotated[
    Path | None,
    typer.Option(help="Directory for logs; default runs/workers-TIME.", rich_help_panel=WORKERS),
]
SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="Any launch setting as key=value, e.g. worker.tool_call_parser=qwen25, "
        "slurm.partition=gpu, ray.address=auto; repeatable.",
        rich_help_panel=WORKERS,
    ),
]


@app.command()
def serve(
    ctx: typer.Context,
    endpoint: Annotated[
        list[str] | None, flag(ProxyConfig, "endpoints", WORKERS, "--endpoint", "-e")
    ] = None,
    backend: BackendOption = None,
    model: ModelOption = None,
    scheduler: SchedulerOption = "local",
    run_dir: RunDirOption = None,
    overrides: SetOption = None,
    host: Annotated[str, flag(ProxyConfig, "host", PROXY)] = _P.host,
    port: Annotated[int, flag(ProxyConfig, "port", PROXY)] = _P.port,
    policy: Annotated[PolicyName, flag(ProxyConfig, "policy", PROXY)] = _P.policy,
    session_balance: Annotated[
        float, flag(SessionConfig, "balance_factor", PROXY)
    ] = _S.balance_factor,
    session_ttl: Annotated[float, flag(SessionConfig, "ttl", PROXY)] = _S.ttl,
    responses_store_capacity: Annotated[
        int, flag(ResponsesConfig, "store_capacity", PROXY, "--responses-store-capacity")
    ] = _RS.store_capacity,
    responses_store_ttl: Annotated[
        float, flag(ResponsesConfig, "store_ttl", PROXY, "--responses-store-ttl")
    ] = _RS.store_ttl,
    responses_store_bytes: Annotated[
        int, flag(ResponsesConfig, "store_bytes", PROXY, "--responses-store-bytes")
    ] = _RS.store_bytes,
    record: Annotated[
        Path | None, flag(ProxyConfig, "record_dir", PROXY, "--record", show_default=False)
    ] = None,
    health_path: Annotated[str, flag(HealthConfig, "path", HEALTH)] = _H.path,
    health_interval: Annotated[float, flag(HealthConfig, "interval", HEALTH)] = _H.interval,
    health_timeout: Annotated[float, flag(HealthConfig, "timeout", HEALTH)] = _H.timeout,
    failure_threshold: Annotated[
        int, flag(HealthConfig, "failure_threshold", HEALTH)
    ] = _H.failure_threshold,
    success_threshold: Annotated[
        int, flag(HealthConfig, "success_threshold", HEALTH)
    ] = _H.success_threshold,
    breaker_failures: Annotated[
        int, flag(HealthConfig, "breaker_failures", HEALTH)
    ] = _H.breaker_failures,
    breaker_cooldown: Annotated[
        float, flag(HealthConfig, "breaker_cooldown", HEALTH)
    ] = _H.breaker_cooldown,
    max_retries: Annotated[int, flag(RetryConfig, "max_retries", RETRIES)] = _R.max_retries,
    backoff_base: Annotated[float, flag(RetryConfig, "backoff_base", RETRIES)] = _R.backoff_base,
    backoff_max: Annotated[float, flag(RetryConfig, "backoff_max", RETRIES)] = _R.backoff_max,
    connect_timeout: Annotated[float, flag(TimeoutConfig, "connect", RETRIES)] = _T.connect,
    timeout: Annotated[float, flag(TimeoutConfig, "total", RETRIES)] = _T.total,
    stream_idle_timeout: Annotated[
        float, flag(TimeoutConfig, "stream_idle", RETRIES)
    ] = _T.stream_idle,
    attempt_timeout: Annotated[
        float | None, flag(TimeoutConfig, "attempt", RETRIES, show_default=False)
    ] = None,
    max_body_bytes: Annotated[int, flag(ProxyConfig, "max_body_bytes", LIMITS)] = _P.max_body_bytes,
    max_in_flight: Annotated[int, flag(LimitsConfig, "max_in_flight", LIMITS)] = _L.max_in_flight,
    max_connections_per_worker: Annotated[
        int, flag(LimitsConfig, "max_connections_per_worker", LIMITS)
    ] = _L.max_connections_per_worker,
    client_timeout: Annotated[
        float, flag(LimitsConfig, "client_timeout", LIMITS)
    ] = _L.client_timeout,
    api_key: Annotated[
        str | None,
        flag(ProxyConfig, "api_key", SECURITY, envvar="AGENT_EVAL_API_KEY", show_default=False),
    ] = None,
    worker_api_key: Annotated[
        str | None,
        flag(
            ProxyConfig,
            "worker_api_key",
            SECURITY,
            envvar="AGENT_EVAL_WORKER_API_KEY",
            show_default=False,
        ),
    ] = None,
    admin_token: Annotated[
        str | None,
        flag(
            ProxyConfig,
            "admin_token",
            SECURITY,
            envvar="AGENT_EVAL_ADMIN_TOKEN",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Serve one OpenAI-compatible endpoint in front of the given workers."""
    fields = {
        "endpoints": endpoint or [],
        "host": host,
        "port": port,
        "policy": policy,
        "api_key": api_key,
        "worker_api_key": worker_api_key,
        "admin_token": admin_token,
        "max_body_bytes": max_body_bytes,
        "record_dir": record,
        "health": {
            "interval": health_interval,
            "timeout": health_timeout,
            "path": health_path,
            "failure_threshold": failure_threshold,
            "success_threshold": success_threshold,
            "breaker_failures": breaker_failures,
            "breaker_cooldown": breaker_cooldown,
        },
        "retry": {
            "max_retries": max_retries,
            "backoff_base": backoff_base,
            "backoff_max": backoff_max,
        },
        "timeouts": {
            "connect": connect_timeout,
            "total": timeout,
            "stream_idle": stream_idle_timeout,
            "attempt": attempt_timeout,
        },
        "limits": {
            "max_in_flight": max_in_flight,
            "max_connections_per_worker": max_connections_per_worker,
            "client_timeout": client_timeout,
        },
        "sessions": {"balance_factor": session_balance, "ttl": session_ttl},
        "responses": {
            "store_capacity": responses_store_capacity,
            "store_ttl": responses_store_ttl,
            "store_bytes": responses_store_bytes,
        },
    }
    proxy = guarded(ctx, validated, ProxyConfig, fields)
    made_token = proxy.admin_token is None
    proxy = proxy.with_admin_token()
    if backend is None:
        screen = ServeScreen(show_admin_token=made_token)
        guarded(ctx, run_until_signalled, _shown(serve_forever(proxy, screen.on_ready), screen))
        return
    launch = guarded(ctx, launch_config, backend, model, scheduler, endpoint, overrides)
    directory = _run_dir(run_dir)
    if made_token:
        guarded(ctx, save_admin_token, proxy.admin_token, directory)
    screen = ServeScreen(_launched_model(launch), show_admin_token=made_token)
    main = serve_over_workers(launch, proxy, directory, screen.on_ready, WaitReporter())
    guarded(ctx, run_until_signalled, _shown(main, screen))


workers_app = typer.Typer(help="Launch inference workers without a proxy.", no_args_is_help=True)
app.add_typer(workers_app, name="workers")


@workers_app.command("up")
def workers_up(
    ctx: typer.Context,
    backend: BackendOption = "llamacpp:d1",
    model: ModelOption = None,
    scheduler: SchedulerOption = "local",
    run_dir: RunDirOption = None,
    overrides: SetOption = None,
    endpoint: Annotated[list[str] | None, typer.Option(hidden=True)] = None,
) -> None:
    """Start workers from an allocation string, print their URLs, stop them on Ctrl-C."""
    launch = guarded(ctx, launch_config, backend, model, scheduler, endpoint, overrides)
    main = hold_workers(launch, _run_dir(run_dir), _print_workers, WaitReporter())
    guarded(ctx, run_until_signalled, main)


def launch_config(
    backend: str | None,
    model: str | None,
    scheduler: str,
    endpoints: list[str] | None,
    overrides: list[str] | None,
) -> LaunchConfig:
    """Flags first, then `--set key=value` overrides, validated as one LaunchConfig."""
    data: dict[str, Any] = {"backend": backend or "llamacpp:d1", "scheduler": scheduler}
    data["endpoints"] = endpoints or []
    if model is not None:
        data["worker"] = {"model": model}
    config = validated(LaunchConfig, apply_overrides(LaunchConfig, data, overrides or []))
    get_backend(Allocation.parse(config.backend).backend)
    return config


def _run_dir(path: Path | None) -> Path:
    return path or Path("runs") / time.strftime("workers-%Y%m%d-%H%M%S")


def _print_workers(endpoints: list[WorkerEndpoint]) -> None:
    console.print(
        Text.assemble((f"{len(endpoints)} worker(s) ready", "bold green"), "; Ctrl-C stops them.")
    )
    for endpoint in endpoints:
        console.print(Text(f"  {endpoint.url}/v1"), soft_wrap=True)


def _launched_model(launch: LaunchConfig) -> str | None:
    """The name launched workers serve under, as far as the config tells (None: unknown)."""
    backend = get_backend(Allocation.parse(launch.backend).backend)
    # SGLang and vLLM serve under the model path when no served name is given.
    return backend.served_name(launch.worker) or launch.worker.model


async def _shown(main: Coroutine[Any, Any, None], screen: ServeScreen) -> None:
    """Run `main`; a signal cancels it, and the screen's task must not outlive it."""
    try:
        await main
    finally:
        await screen.close()
