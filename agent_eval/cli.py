"""The `agent-eval` command line."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer
from pydantic import BaseModel, ValidationError
from rich.console import Console
from rich.logging import RichHandler

from agent_eval.errors import AgentEvalError
from agent_eval.proxy.config import (
    HealthConfig,
    PolicyName,
    ProxyConfig,
    RetryConfig,
    SessionConfig,
    TimeoutConfig,
)

app = typer.Typer(
    help="Evaluate tool-calling agents at scale behind one OpenAI-compatible router proxy.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
err_console = Console(stderr=True)
T = TypeVar("T")

PROXY, WORKERS, HEALTH, RETRIES, SECURITY = (
    "Proxy",
    "Workers",
    "Health",
    "Retries and timeouts",
    "Security",
)
_P, _H, _R, _T, _S = ProxyConfig(), HealthConfig(), RetryConfig(), TimeoutConfig(), SessionConfig()


def flag(model: type[BaseModel], field: str, panel: str, *names: str, **extra: Any) -> Any:
    """A typer option whose help comes from the config field it sets (one source of truth)."""
    return typer.Option(
        *names, help=model.model_fields[field].description, rich_help_panel=panel, **extra
    )


@app.callback()
def main(
    ctx: typer.Context,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks and debug logs.")] = False,
) -> None:
    """Evaluate tool-calling agents at scale behind one OpenAI-compatible router proxy."""
    handler = RichHandler(console=err_console, show_path=False, rich_tracebacks=debug)
    logging.basicConfig(level=logging.WARNING, format="%(message)s", handlers=[handler])
    logging.getLogger("agent_eval").setLevel(logging.DEBUG if debug else logging.INFO)
    ctx.obj = debug


@app.command()
def serve(
    ctx: typer.Context,
    endpoint: Annotated[
        list[str] | None, flag(ProxyConfig, "endpoints", WORKERS, "--endpoint", "-e")
    ] = None,
    host: Annotated[str, flag(ProxyConfig, "host", PROXY)] = _P.host,
    port: Annotated[int, flag(ProxyConfig, "port", PROXY)] = _P.port,
    policy: Annotated[PolicyName, flag(ProxyConfig, "policy", PROXY)] = _P.policy,
    session_balance: Annotated[
        float, flag(SessionConfig, "balance_factor", PROXY)
    ] = _S.balance_factor,
    session_ttl: Annotated[float, flag(SessionConfig, "ttl", PROXY)] = _S.ttl,
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
    max_body_bytes: Annotated[
        int, flag(ProxyConfig, "max_body_bytes", RETRIES)
    ] = _P.max_body_bytes,
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
) -> None:
    """Serve one OpenAI-compatible endpoint in front of the given workers."""
    from agent_eval.proxy.server import run_proxy

    fields = {
        "endpoints": endpoint or [],
        "host": host,
        "port": port,
        "policy": policy,
        "api_key": api_key,
        "worker_api_key": worker_api_key,
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
        },
        "sessions": {"balance_factor": session_balance, "ttl": session_ttl},
    }
    config = guarded(ctx, validated, ProxyConfig, fields)
    guarded(ctx, run_proxy, config, _announcer(config))


def _announcer(config: ProxyConfig) -> Callable[[str], None]:
    def on_ready(base_url: str) -> None:
        console.print(
            f"[bold green]agent-eval proxy[/] listening at [bold]{base_url}[/]", soft_wrap=True
        )
        for url in config.endpoints:
            console.print(f"  worker {url}", soft_wrap=True)
        if not config.endpoints:
            console.print("  no workers yet: add one with POST /workers")
        console.print("Ctrl-C stops it.")

    return on_ready


def validated(model: type[BaseModel], fields: dict[str, Any]) -> Any:
    """The config model built from user input; a bad value ends in one message naming it."""
    try:
        return model.model_validate(fields)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}" for error in exc.errors()
        )
        fail(problems)


def guarded(ctx: typer.Context, function: Callable[..., T], *args: Any) -> T:
    """Run a command's work: a user's mistake ends in one message and exit code 2."""
    try:
        return function(*args)
    except AgentEvalError as exc:
        if ctx.obj:
            raise
        fail(str(exc))
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


def fail(message: str) -> NoReturn:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(2)
