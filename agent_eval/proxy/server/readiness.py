"""GET /readiness: whether the proxy can take requests; in a group, whichever process takes them.

An evaluation framework or a load balancer waits for it once, then sends requests that may reach
any process of a group: so a group answers ready only when every process is, and counts the
healthy workers as the process that sees the fewest does.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from agent_eval.proxy.errors import error_response, no_healthy_worker
from agent_eval.proxy.server.keys import GROUP, HEALTH, POOL
from agent_eval.proxy.server.siblings import SiblingAnswer, ask_siblings, relayed

STARTING = "proxy_starting"


async def readiness(request: web.Request) -> web.Response:
    """GET /readiness: 200 once this process (in a group, every process) knows its workers'
    health and finds one healthy; else 503 saying why."""
    own = _own(request.app)
    if isinstance(own, web.Response):
        return own
    if relayed(request):
        return web.json_response(own)
    if unstarted := request.app[GROUP].unstarted():
        return _starting(f"proxy process {unstarted[0]} has not started yet")
    # A process that cannot be reached has exited: it takes no connection on the shared port.
    answers = [answer for answer in await ask_siblings(request) if answer.status is not None]
    for answer in answers:
        if answer.status != 200:
            return _not_ready(answer)
    healthy = min([own["healthy_workers"], *(a.body["healthy_workers"] for a in answers)])
    return web.json_response({**own, "healthy_workers": healthy, "processes": 1 + len(answers)})


def _own(app: web.Application) -> dict[str, Any] | web.Response:
    """This process's readiness: its figures, or the 503 that says why it is not ready."""
    if not app[HEALTH].settled:
        return _starting("the proxy's first health probes of its workers are under way")
    pool = app[POOL]
    healthy = len(pool.healthy())
    if not healthy:
        return no_healthy_worker(len(pool))
    return {"status": "ready", "healthy_workers": healthy, "workers": len(pool)}


def _starting(why: str) -> web.Response:
    return error_response(503, STARTING, f"{why}; retry in a moment", retry_after=1)


def _not_ready(answer: SiblingAnswer) -> web.Response:
    """A sibling's 503, its message naming the process."""
    error = answer.body.get("error", {}) if isinstance(answer.body, dict) else {}
    message = error.get("message", f"answered {answer.status}")
    code = error.get("code", STARTING)
    return error_response(503, code, f"proxy process {answer.member}: {message}", retry_after=1)
