"""The proxy's HTTP server connections: malformed HTTP is answered in OpenAI's error shape.

aiohttp answers what its parser rejects (a smuggling attempt, an oversized header, a bad
request line) in plain text from its connection class; this subclass answers in JSON.
"""

from __future__ import annotations

from aiohttp import web
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

from agent_eval.proxy.errors import error_body


class _JSONErrors(RequestHandler):
    """A server connection whose own error answers are OpenAI-shaped JSON."""

    __slots__ = ()

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        super().handle_error(request, status, exc, message)  # logs; raises once bytes went out
        if status >= 500:
            code, text = "proxy_error", "the proxy failed on this request; see its log"
        else:
            code = "invalid_http"
            text = f"the request is not valid HTTP/1.1 ({message or status}); fix the client"
        response = web.Response(
            status=status, body=error_body(status, code, text), content_type="application/json"
        )
        response.force_close()
        return response


class _Server(web.Server):
    def __call__(self) -> RequestHandler:
        return _JSONErrors(self, loop=self._loop, **self._kwargs)


class ProxyRunner(web.AppRunner):
    """An AppRunner whose connections answer malformed HTTP in OpenAI's error shape."""

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        # aiohttp builds its Server itself and has no option for the connection class.
        server.__class__ = _Server
        return server
