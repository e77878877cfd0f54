"""`agent-eval serve` and `agent-eval workers up`: the proxy, launched workers, or both."""

from __future__ import annotations

import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from agent_eval.cli.common import WaitReporter, console, guarded
from agent_eval.cli.options import WHERE, default, option, overrides_argument, settings_given
from agent_eval.cli.serve_screen import ServeScreen
from agent_eval.launch.config import LaunchConfig, ServeConfig
from agent_eval.proxy.server.auth import save_admin_token
from agent_eval.proxy.server.process import serve_proxy
from agent_eval.run.workers import WorkerEndpoint, hold_workers, serve_over_workers
from agent_eval.settings import load_settings
from agent_eval.system.lifecycle import run_until_signalled

RunDirOption = Annotated[
    Path | None,
    typer.Option(
        "--run-dir", help="Directory for logs; default runs/workers-TIME.", rich_help_panel=WHERE
    ),
]
LAUNCH_EXAMPLE = "rollout.worker.tool_call_parser=qwen25 scheduler.slurm.partition=gpu"


def serve(
    ctx: typer.Context,
    overrides: Annotated[list[str] | None, overrides_argument(LAUNCH_EXAMPLE)] = None,
    endpoint: Annotated[list[str] | None, option("endpoint")] = None,
    backend: Annotated[str | None, option("backend")] = None,
    model: Annotated[str | None, option("model")] = None,
    scheduler: Annotated[str | None, option("scheduler")] = None,
    log_dir: RunDirOption = None,
    host: Annotated[str, option("host")] = default("host"),
    port: Annotated[int, option("port")] = default("port"),
    serve_processes: Annotated[int | None, option("serve_processes")] = None,
    policy: Annotated[str, option("policy")] = default("policy"),
    session_balance: Annotated[float, option("session_balance")] = default("session_balance"),
    session_ttl: Annotated[float, option("session_ttl")] = default("session_ttl"),
    responses_store_capacity: Annotated[int, option("responses_store_capacity")] = default(
        "responses_store_capacity"
    ),
    responses_store_ttl: Annotated[float, option("responses_store_ttl")] = default(
        "responses_store_ttl"
    ),
    responses_store_bytes: Annotated[int, option("responses_store_bytes")] = default(
        "responses_store_bytes"
    ),
    record: Annotated[Path | None, option("record")] = None,
    health_path: Annotated[str, option("health_path")] = default("health_path"),
    health_interval: Annotated[float, option("health_interval")] = default("health_interval"),
    health_timeout: Annotated[float, option("health_timeout")] = default("health_timeout"),
    failure_threshold: Annotated[int, option("failure_threshold")] = default("failure_threshold"),
    success_threshold: Annotated[int, option("success_threshold")] = default("success_threshold"),
    breaker_failures: Annotated[int, option("breaker_failures")] = default("breaker_failures"),
    breaker_cooldown: Annotated[float, option("breaker_cooldown")] = default("breaker_cooldown"),
    max_retries: Annotated[int, option("max_retries")] = default("max_retries"),
    backoff_base: Annotated[float, option("backoff_base")] = default("backoff_base"),
    backoff_max: Annotated[float, option("backoff_max")] = default("backoff_max"),
    connect_timeout: Annotated[float, option("connect_timeout")] = default("connect_timeout"),
    timeout: Annotated[float, option("timeout")] = default("timeout"),
    stream_idle_timeout: Annotated[float, option("stream_idle_timeout")] = default(
        "stream_idle_timeout"
    ),
    worker_timeout: Annotated[float | None, option("worker_timeout")] = None,
    max_body_bytes: Annotated[int, option("max_body_bytes")] = default("max_body_bytes"),
    max_response_bytes: Annotated[int, option("max_response_bytes")] = default(
        "max_response_bytes"
    ),
    max_choices: Annotated[int | None, option("max_choices")] = None,
    max_event_bytes: Annotated[int, option("max_event_bytes")] = default("max_event_bytes"),
    max_in_flight: Annotated[int, option("max_in_flight")] = default("max_in_flight"),
    max_connections_per_worker: Annotated[int, option("max_connections_per_worker")] = default(
        "max_connections_per_worker"
    ),
    client_timeout: Annotated[float, option("client_timeout")] = default("client_timeout"),
    api_key: Annotated[str | None, option("api_key")] = None,
    worker_api_key: Annotated[str | None, option("worker_api_key")] = None,
    admin_token: Annotated[str | None, option("admin_token")] = None,
) -> None:
    """Serve one OpenAI-compatible endpoint in front of the given workers."""
    flags = settings_given(ctx)
    config = guarded(ctx, load_settings, ServeConfig, None, flags, overrides or [])
    made_token = config.proxy.admin_token is None
    proxy = guarded(ctx, config.proxy_config).with_admin_token()
    directory = _run_dir(log_dir)
    if not guarded(ctx, config.launches):
        screen = ServeScreen(show_admin_token=made_token)
        main = serve_proxy(proxy, directory, screen.on_ready)
        guarded(ctx, run_until_signalled, _shown(main, screen))
        return
    if made_token:
        guarded(ctx, save_admin_token, proxy.admin_token, directory)
    screen = ServeScreen(_launched_model(config), show_admin_token=made_token)
    main = serve_over_workers(config, proxy, directory, screen.on_ready, WaitReporter())
    guarded(ctx, run_until_signalled, _shown(main, screen))


def workers_up(
    ctx: typer.Context,
    overrides: Annotated[list[str] | None, overrides_argument(LAUNCH_EXAMPLE)] = None,
    backend: Annotated[str | None, option("backend")] = None,
    model: Annotated[str | None, option("model")] = None,
    scheduler: Annotated[str | None, option("scheduler")] = None,
    log_dir: RunDirOption = None,
) -> None:
    """Start workers from an allocation string, print their URLs, stop them on Ctrl-C."""
    flags = settings_given(ctx)
    config = guarded(ctx, load_settings, LaunchConfig, None, flags, overrides or [])
    guarded(ctx, config.backend)
    main = hold_workers(config, _run_dir(log_dir), _print_workers, WaitReporter())
    guarded(ctx, run_until_signalled, main)


workers = typer.Typer(
    name="workers", help="Launch inference workers without a proxy.", no_args_is_help=True
)
workers.command("up")(workers_up)


def _run_dir(path: Path | None) -> Path:
    return path or Path("runs") / time.strftime("workers-%Y%m%d-%H%M%S")


def _print_workers(endpoints: list[WorkerEndpoint]) -> None:
    console.print(
        Text.assemble((f"{len(endpoints)} worker(s) ready", "bold green"), "; Ctrl-C stops them.")
    )
    for endpoint in endpoints:
        console.print(Text(f"  {endpoint.url}/v1"), soft_wrap=True)


def _launched_model(config: LaunchConfig) -> str | None:
    """The name launched workers serve under, as far as the config tells (None: unknown)."""
    return config.backend().served_name(config.worker())


async def _shown(main: Coroutine[Any, Any, None], screen: ServeScreen) -> None:
    """Run `main`; a signal cancels it, and the screen's task must not outlive it."""
    try:
        await main
    finally:
        await screen.close()
