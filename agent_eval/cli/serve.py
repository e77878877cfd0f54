"""`agent-eval serve` and `agent-eval workers up`: the proxy, launched workers, or both."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Annotated, Any

import aiohttp
import typer
from rich.console import RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.text import Text

from agent_eval.allocation import Allocation
from agent_eval.backends import get_backend
from agent_eval.cli import app
from agent_eval.cli.common import WaitReporter, console, flag, guarded, validated
from agent_eval.launch import LaunchConfig, WorkerEndpoint, hold_workers, serve_over_workers
from agent_eval.lifecycle import run_until_signalled
from agent_eval.overrides import apply_overrides
from agent_eval.progress.workers import WorkerPoller, WorkerStatus, worker_table
from agent_eval.proxy.config import (
    HealthConfig,
    PolicyName,
    ProxyConfig,
    RetryConfig,
    SessionConfig,
    TimeoutConfig,
)
from agent_eval.proxy.server import serve_forever

PROXY, WORKERS, HEALTH, RETRIES, SECURITY = (
    "Proxy",
    "Workers",
    "Health",
    "Retries and timeouts",
    "Security",
)
_P, _H, _R, _T, _S = ProxyConfig(), HealthConfig(), RetryConfig(), TimeoutConfig(), SessionConfig()

MODEL_PLACEHOLDER = "MODEL"
KEY_VARIABLE = "AGENT_EVAL_API_KEY"
PANEL_INTERVAL = 1.0


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
    proxy = guarded(ctx, validated, ProxyConfig, fields)
    if backend is None:
        screen = ServeScreen()
        guarded(ctx, run_until_signalled, _shown(serve_forever(proxy, screen.on_ready), screen))
        return
    launch = guarded(ctx, launch_config, backend, model, scheduler, endpoint, overrides)
    screen = ServeScreen(_launched_model(launch))
    main = serve_over_workers(launch, proxy, _run_dir(run_dir), screen.on_ready, WaitReporter())
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
    console.print(f"[bold green]{len(endpoints)} worker(s) ready[/]; Ctrl-C stops them.")
    for endpoint in endpoints:
        console.print(f"  {endpoint.url}/v1", soft_wrap=True)


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


class ServeScreen:
    """What `serve` shows: the address, paste-ready client commands, then a worker panel."""

    def __init__(self, model_hint: str | None = None) -> None:
        self._model_hint = model_hint
        self._task: asyncio.Task[None] | None = None

    def on_ready(self, base_url: str, config: ProxyConfig) -> None:
        """The proxy listens: its address at once; the rest waits on HTTP, so in a task."""
        announce(base_url, config)
        self._task = asyncio.get_running_loop().create_task(self._follow(base_url, config))

    async def close(self) -> None:
        """Stop the panel; a crash in it re-raises here, so a bug is not hidden."""
        if (task := self._task) is None:
            return
        task.cancel()
        await asyncio.wait([task])
        if not task.cancelled() and (error := task.exception()) is not None:
            raise error

    async def _follow(self, base_url: str, config: ProxyConfig) -> None:
        key = config.api_key.get_secret_value() if config.api_key else None
        # Workers are probed at once on start; a worker that is down fails within the timeout.
        models = await proxy_models(base_url, key, config.health.timeout + 1)
        model = next(iter(models), None) or self._model_hint or MODEL_PLACEHOLDER
        show_commands(base_url, model, keyed=key is not None)
        console.print("Ctrl-C stops it.")
        # Off a terminal the proxy's own log lines already say when a worker goes up or down.
        if console.is_terminal:
            await worker_panel(base_url, key)


async def proxy_models(base_url: str, api_key: str | None, wait: float) -> list[str]:
    """Models the proxy's workers serve; waits up to `wait` s for the first probes, [] if none."""
    root = base_url.removesuffix("/v1")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=wait)) as http:
        while True:
            workers = await _workers(http, f"{root}/workers", headers)
            models = [str(m) for w in workers for m in w.get("models", [])]
            # An empty pool or every worker down will not name a model by waiting longer.
            if models or all(w.get("last_error") for w in workers) or loop.time() > deadline:
                return list(dict.fromkeys(models))
            await asyncio.sleep(0.1)


async def _workers(
    http: aiohttp.ClientSession, url: str, headers: dict[str, str]
) -> list[dict[str, Any]]:
    """The proxy's `/workers` list; [] when it cannot be had (the commands still help)."""
    try:
        async with http.get(url, headers=headers) as response:
            response.raise_for_status()
            return list((await response.json())["workers"])
    except (aiohttp.ClientError, TimeoutError, OSError, ValueError, KeyError, TypeError):
        return []


def client_commands(base_url: str, model: str, keyed: bool) -> list[tuple[str, str]]:
    """(title, text) of paste-ready commands; a proxy's key stays a variable, never the value."""
    env_key = f"${KEY_VARIABLE}" if keyed else "unused"
    py_key = f'os.environ["{KEY_VARIABLE}"]' if keyed else '"unused"'
    imports = "import os\n" if keyed else ""
    lm_env = f"OPENAI_API_KEY=${KEY_VARIABLE} " if keyed else ""
    hi = '[{"role": "user", "content": "Hi"}]'
    return [
        (
            "lm-evaluation-harness",
            f"{lm_env}lm_eval --model local-chat-completions --apply_chat_template \\\n"
            "  --tasks gsm8k \\\n"
            f"  --model_args model={model},base_url={base_url}/chat/completions,num_concurrent=64",
        ),
        (
            "Inspect AI",
            f"AGENTEVAL_BASE_URL={base_url} AGENTEVAL_API_KEY={env_key} \\\n"
            f"  inspect eval task.py --model openai-api/agenteval/{model}",
        ),
        (
            "openai SDK (Python)",
            f"{imports}from openai import OpenAI\n"
            f'client = OpenAI(base_url="{base_url}", api_key={py_key})\n'
            f'client.chat.completions.create(model="{model}", messages={hi})',
        ),
        (
            "Agents SDK (Python)",
            f"{imports}from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner\n"
            "from openai import AsyncOpenAI\n"
            f'client = AsyncOpenAI(base_url="{base_url}", api_key={py_key})\n'
            f'model = OpenAIChatCompletionsModel(model="{model}", openai_client=client)\n'
            'agent = Agent(name="a", model=model)\n'
            'result = Runner.run_sync(agent, "Hi", run_config=RunConfig(tracing_disabled=True))\n'
            "print(result.final_output)\n"
            "# Responses API instead, with workers that serve /v1/responses:\n"
            f'# set_default_openai_client(client); agent = Agent(name="a", model="{model}")',
        ),
    ]


def show_commands(base_url: str, model: str, keyed: bool) -> None:
    """Print the client commands unwrapped and unstyled, so they paste as they are."""
    note = f"; export {KEY_VARIABLE} first, the proxy checks it" if keyed else ""
    console.print(f"Paste-ready client commands for model [bold]{model}[/]{note}:", soft_wrap=True)
    for title, text in client_commands(base_url, model, keyed):
        console.print(f"[dim]# {title}[/]", soft_wrap=True)
        console.out(text, highlight=False)


async def worker_panel(base_url: str, api_key: str | None) -> None:
    """The workers' health and load, redrawn about once a second until cancelled."""
    poller = WorkerPoller(base_url, PANEL_INTERVAL, api_key)
    # Transient: on Ctrl-C the proxy stops before the panel, whose last frame would only say so.
    live = Live(
        console=console,
        refresh_per_second=1 / PANEL_INTERVAL,
        transient=True,
        get_renderable=lambda: _panel(poller.status),
    )
    with live:
        await poller.run()


def _panel(status: WorkerStatus | None) -> Panel:
    body: RenderableType = (
        Text("asking the proxy for its workers...", style="dim")
        if status is None
        else worker_table(status)
    )
    title = "workers" if status is None or status.error else status.summary()
    return Panel(body, title=title, title_align="left", expand=False)


def announce(base_url: str, config: ProxyConfig) -> None:
    """The proxy's address and its workers, once it listens."""
    console.print(
        f"[bold green]agent-eval proxy[/] listening at [bold]{base_url}[/]", soft_wrap=True
    )
    for url in config.endpoints:
        console.print(f"  worker {url}", soft_wrap=True)
    if not config.endpoints:
        console.print("  no workers yet: add one with POST /workers")
