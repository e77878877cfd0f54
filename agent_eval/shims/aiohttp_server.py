"""aiohttp server connections whose own error answers (malformed HTTP, a handler's crash) are
ours: aiohttp writes them in plain text.

Relies on `web_protocol.RequestHandler.handle_error(self, request, status, exc, message)`, called
for what aiohttp's parser rejects and for a handler that raised, and on `web.Server` building
each connection in `__call__` from its `_loop` and `_kwargs`. `AppRunner._make_server` builds
the Server with no option for the connection class, so the runner swaps the built Server's
class for one that builds ours. Checked against aiohttp 3.14.5.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from aiohttp import web
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

ErrorAnswer = Callable[[int, str | None], web.StreamResponse]
"""The answer to a request aiohttp could not serve, from its status and aiohttp's reason."""


class _Connection(RequestHandler):
    """A server connection that answers its own errors with the runner's `ErrorAnswer`."""

    __slots__ = ("answer",)
    answer: ErrorAnswer

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        super().handle_error(request, status, exc, message)  # logs; raises once bytes went out
        response = self.answer(status, message)
        response.force_close()  # as aiohttp's own: the connection's state is unknown
        return response


class _Server(web.Server):
    answer: ErrorAnswer

    def __call__(self) -> RequestHandler:
        connection = _Connection(self, loop=self._loop, **self._kwargs)
        connection.answer = self.answer
        return connection


class ErrorAnsweringRunner(web.AppRunner):
    """An AppRunner whose connections answer what aiohttp cannot serve with `answer`."""

    def __init__(self, app: web.Application, answer: ErrorAnswer, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self._answer = answer

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        server.__class__ = _Server
        cast(_Server, server).answer = self._answer
        return server
