"""What `agent-eval serve` shows: the address, paste-ready client commands, a worker panel."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
from rich.console import RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.text import Text

from agent_eval.cli.common import console
from agent_eval.progress.workers import WorkerPoller, WorkerStatus, worker_table
from agent_eval.proxy.admin_client import fetch_workers
from agent_eval.proxy.config import ProxyConfig
from agent_eval.system.credentials import API_KEY
from agent_eval.system.lifecycle import logs_through

MODEL_PLACEHOLDER = "MODEL"
NO_WORKERS = (
    " with no workers yet: start it with --backend llamacpp:d2 (the embedded model) or "
    "--endpoint URL (a server you run), or add one now with POST /workers and the admin token"
)
PANEL_INTERVAL = 1.0


class ServeScreen:
    """What `serve` shows: the address, paste-ready client commands, then a worker panel."""

    def __init__(self, model_hint: str | None = None, show_admin_token: bool = False) -> None:
        self._model_hint = model_hint
        self._show_admin_token = show_admin_token
        self._task: asyncio.Task[None] | None = None

    def on_ready(self, base_url: str, config: ProxyConfig) -> None:
        """The proxy listens: its address at once; the rest waits on HTTP, so in a task."""
        announce(base_url, config)
        if self._show_admin_token and config.admin_token is not None:
            # Printed once, like Jupyter's token: whoever started the proxy may change workers and
            # open attempts.
            console.print(
                Text.assemble(
                    "  admin token for /workers and /attempts: ",
                    (config.admin_token.get_secret_value(), "bold"),
                ),
                soft_wrap=True,
            )
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
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=wait)) as http:
        while True:
            workers = await _workers(http, base_url, api_key)
            models = [str(m) for w in workers for m in w.get("models", [])]
            # An empty pool or every worker down will not name a model by waiting longer.
            if models or all(w.get("last_error") for w in workers) or loop.time() > deadline:
                return list(dict.fromkeys(models))
            await asyncio.sleep(0.1)


async def _workers(
    http: aiohttp.ClientSession, base_url: str, api_key: str | None
) -> list[dict[str, Any]]:
    """The proxy's `/workers` list; [] when it cannot be had (the commands still help)."""
    try:
        return await fetch_workers(http, base_url, api_key)
    except (aiohttp.ClientError, TimeoutError, OSError, ValueError, KeyError, TypeError):
        return []


def client_commands(base_url: str, model: str, keyed: bool) -> list[tuple[str, str]]:
    """(title, text) of paste-ready commands; a proxy's key stays a variable, never the value."""
    env_key = f"${API_KEY}" if keyed else "unused"
    py_key = f'os.environ["{API_KEY}"]' if keyed else '"unused"'
    imports = "import os\n" if keyed else ""
    lm_env = f"OPENAI_API_KEY=${API_KEY} " if keyed else ""
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
            f"{imports}from agents import Agent, RunConfig, Runner, set_default_openai_client\n"
            "from openai import AsyncOpenAI\n"
            f'set_default_openai_client(AsyncOpenAI(base_url="{base_url}", api_key={py_key}))\n'
            f'agent = Agent(name="a", model="{model}")\n'
            'result = Runner.run_sync(agent, "Hi", run_config=RunConfig(tracing_disabled=True))\n'
            "print(result.final_output)\n"
            "# The Responses API, served on every backend; for Chat Completions instead:\n"
            '# agents.set_default_openai_api("chat_completions")',
        ),
    ]


def show_commands(base_url: str, model: str, keyed: bool) -> None:
    """Print the client commands unwrapped and unstyled, so they paste as they are."""
    note = f"; export {API_KEY} first, the proxy checks it" if keyed else ""
    console.print(
        Text.assemble("Paste-ready client commands for model ", (model, "bold"), f"{note}:"),
        soft_wrap=True,
    )
    for title, text in client_commands(base_url, model, keyed):
        console.print(Text(f"# {title}", style="dim"), soft_wrap=True)
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
    with live, logs_through(console):
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
    """The proxy's address and its workers, once it listens; without any, how to give it some."""
    console.print(
        Text.assemble(
            ("agent-eval proxy", "bold green"),
            " listening at ",
            (base_url, "bold"),
            "" if config.endpoints else NO_WORKERS,
        ),
        soft_wrap=True,
    )
    for url in config.endpoints:
        console.print(Text(f"  worker {url}"), soft_wrap=True)
