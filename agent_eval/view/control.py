"""Control of running runs from the view, when it was started with --control.

A state-changing request is a POST that carries the token printed with the view's URL (in a
header, which another site's page cannot set without a preflight the view does not answer),
and an Origin that is the view's own. The view forwards it to the run's control socket.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web
from pydantic import ValidationError

from agent_eval.run.control.channel import ask
from agent_eval.run.control.protocol import ControlError, Reply, Request
from agent_eval.view.catalog import Catalog
from agent_eval.view.refused import Refused

TOKEN_HEADER = "X-Agent-Eval-Token"
TOKEN_PARAMETER = "control"
"""The page's query parameter that hands it the token: `/?control=TOKEN`."""


@dataclass(frozen=True)
class ViewControl:
    """Whether the view may control runs, and the token a request must carry to do so."""

    token: str | None

    @classmethod
    def enabled(cls, on: bool) -> ViewControl:
        """A fresh random token when `on`; else none, and no run is controlled."""
        return cls(secrets.token_urlsafe(32) if on else None)

    def page_url(self, url: str) -> str:
        """The view's address as printed: with the token, when control is on."""
        return url if self.token is None else f"{url}?{TOKEN_PARAMETER}={self.token}"

    def check(self, request: web.Request) -> None:
        """Raises: Refused unless control is on and `request` is the view's own page's."""
        if self.token is None:
            raise Refused(403, "this view only reads: start it with --control to act on runs")
        given = request.headers.get(TOKEN_HEADER, "")
        if not secrets.compare_digest(given.encode(), self.token.encode()):
            raise Refused(403, f"a control request needs the view's token in {TOKEN_HEADER}")
        origin, host = request.headers.get("Origin"), request.headers.get("Host")
        if origin is None or origin != f"{request.scheme}://{host}":
            raise Refused(403, f"a control request comes from the view's own page, not {origin}")


READ_ONLY = ViewControl(None)
"""A view that controls no run: the default."""


async def control_state(catalog: Catalog, control: ViewControl, run_id: str) -> dict[str, Any]:
    """Whether the run can be controlled from here, and its state when it plays."""
    path = await _run_path(catalog, run_id)
    body: dict[str, Any] = {"enabled": control.token is not None, "running": False}
    try:
        reply = await ask(path, Request(action="status"))
    except ControlError as exc:
        return {**body, "message": str(exc)}
    return {**body, "running": True, **_reply(reply)}


async def control_action(
    catalog: Catalog, control: ViewControl, run_id: str, request: web.Request
) -> dict[str, Any]:
    """Forward the POSTed action to the run. Raises: Refused (403, 400, 404, 409)."""
    control.check(request)
    try:
        action = Request.model_validate(orjson.loads(await request.read()))
    except (orjson.JSONDecodeError, ValidationError) as exc:
        raise Refused(400, f"not a control action: {exc}") from None
    path = await _run_path(catalog, run_id)
    try:
        reply = await ask(path, action)
    except ControlError as exc:
        raise Refused(409, str(exc)) from None
    if not reply.ok:
        raise Refused(409, reply.message)
    return _reply(reply)


async def _run_path(catalog: Catalog, run_id: str) -> Path:
    run = await catalog.run(run_id)
    if run is None:
        raise Refused(404, f"no run {run_id!r} under the roots served")
    return run.path


def _reply(reply: Reply) -> dict[str, Any]:
    state = None if reply.state is None else reply.state.model_dump()
    return {"message": reply.message, "state": state}
