"""Run the proxy on a socket until it is told to stop."""

from __future__ import annotations

import contextlib
import gc
import logging
from collections.abc import AsyncIterator, Callable

from aiohttp import web

from agent_eval.errors import ProxyStartError
from agent_eval.proxy.capture.routes import ATTEMPTS
from agent_eval.proxy.config import ProxyConfig
from agent_eval.proxy.server.app import build_app
from agent_eval.proxy.server.group import Group
from agent_eval.proxy.server.limits import raise_open_files_limit
from agent_eval.proxy.server.protocol import ProxyRunner
from agent_eval.system.lifecycle import forever

log = logging.getLogger(__name__)


@contextlib.asynccontextmanager
async def running_proxy(config: ProxyConfig, group: Group | None = None) -> AsyncIterator[str]:
    """Serve the proxy inside the block; yields its base URL (`http://HOST:PORT/v1`).

    `group`: this process's place in a group sharing the port (SO_REUSEPORT), if it is one."""
    raise_open_files_limit()
    reuse_port = group is not None
    app = build_app(config.with_admin_token(), group)
    # Handler cancellation lets a client that disconnects cancel its upstream request. The
    # keep-alive timeout also closes a connection whose request head is still incomplete
    # after it: slow clients (slowloris) cannot hold connections for ever.
    runner = ProxyRunner(
        app,
        handler_cancellation=True,
        access_log=None,
        keepalive_timeout=config.limits.client_timeout,
    )
    await runner.setup()
    try:
        site = web.TCPSite(
            runner, config.host, config.port, backlog=4096, reuse_port=reuse_port or None
        )
        try:
            await site.start()
        except OSError as exc:
            raise ProxyStartError(
                f"cannot listen on {config.host}:{config.port} ({exc.strerror}); "
                "pass another --port, or --port 0 for a free one"
            ) from None
        host, port = runner.addresses[0][:2]
        if group is not None:
            origin = app[ATTEMPTS].origin = await _own_origin(runner, config.host, port)
            group.publish(origin)
        yield f"http://{_url_host(host)}:{port}/v1"
    finally:
        await runner.cleanup()


async def serve_forever(
    config: ProxyConfig, on_ready: Callable[[str, ProxyConfig], None], group: Group | None = None
) -> None:
    """Serve until cancelled; `on_ready` gets the base URL and the config (with its admin
    token) once bound."""
    config = config.with_admin_token()
    async with running_proxy(config, group) as base_url:
        # Everything built so far lives as long as the process: keep it out of the
        # collector, whose full passes over it otherwise stall the event loop ~50 ms.
        gc.freeze()
        on_ready(base_url, config)
        await forever()


async def _own_origin(runner: ProxyRunner, host: str, shared_port: int) -> str:
    """A port of this process alone beside the shared one, for the attempts it holds: the
    kernel spreads the shared port's connections over the processes by their addresses."""
    await web.TCPSite(runner, host, 0, backlog=4096).start()
    own = next(a for a in runner.addresses if a[1] != shared_port)
    return f"http://{_url_host(own[0])}:{own[1]}"


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
