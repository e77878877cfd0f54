"""Run the proxy on a socket until it is told to stop."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
from collections.abc import AsyncIterator, Callable

from aiohttp import web

from agent_eval.errors import ProxyStartError
from agent_eval.proxy.app import build_app
from agent_eval.proxy.config import ProxyConfig

try:  # uvloop, where it is installed, cuts the proxy's per-request overhead
    from uvloop import run as run_event_loop
except ImportError:
    from asyncio import run as run_event_loop

log = logging.getLogger(__name__)


@contextlib.asynccontextmanager
async def running_proxy(config: ProxyConfig) -> AsyncIterator[str]:
    """Serve the proxy inside the block; yields its base URL (`http://HOST:PORT/v1`)."""
    app = build_app(config)
    # Handler cancellation lets a client that disconnects cancel its upstream request.
    runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, config.host, config.port, backlog=4096)
        try:
            await site.start()
        except OSError as exc:
            raise ProxyStartError(
                f"cannot listen on {config.host}:{config.port} ({exc.strerror}); "
                "pass another --port, or --port 0 for a free one"
            ) from None
        host, port = runner.addresses[0][:2]
        yield f"http://{_url_host(host)}:{port}/v1"
    finally:
        await runner.cleanup()


def run_proxy(config: ProxyConfig, on_ready: Callable[[str], None]) -> None:
    """Block serving the proxy until SIGINT or SIGTERM; `on_ready` gets the base URL once bound."""
    run_event_loop(_serve_until_stopped(config, on_ready))


async def _serve_until_stopped(config: ProxyConfig, on_ready: Callable[[str], None]) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with running_proxy(config) as base_url:
        # Everything built so far lives as long as the process: keep it out of the
        # collector, whose full passes over it otherwise stall the event loop ~50 ms.
        gc.freeze()
        on_ready(base_url)
        await stop.wait()
        log.info("stopping the proxy")


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
