"""The request record that forwarding, streaming and the Responses route all pass around."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from agent_eval.proxy.capture.call import Call
from agent_eval.proxy.capture.token_fields import TokenAsk
from agent_eval.proxy.policies import RequestInfo
from agent_eval.proxy.responses.store import Turn


@dataclass
class Exchange:
    """One client request on its way through the proxy."""

    request: web.Request
    body: bytes
    payload: dict[str, Any]
    info: RequestInfo
    started: float
    history: Turn | None = None
    """The stored conversation a Responses follow-up continues, put in front of its input."""
    call: Call | None = None
    """The attempt call this request is, when it came with an attempt key: recorded as it ends."""
    tokens: TokenAsk | None = None
    """What the proxy adds to the request for the call's token ids and logprobs, when it does."""
    tried_at: float | None = None
    """When the try of a worker under way began; None while it waits for one."""

    def trying(self, at: float | None) -> None:
        """A try of a worker began `at`; None: it failed, and the request waits again."""
        self.tried_at = at
        if self.call is not None:
            self.call.tried_at = at

    def waited(self) -> float:
        """Seconds before the try under way (or that answered): what it waited for a free
        worker; all of them while it waits."""
        until = self.tried_at if self.tried_at is not None else time.monotonic()
        return round(until - self.started, 6)
