"""The proxy's HTTP server connections: malformed HTTP is answered in OpenAI's error shape.

aiohttp answers what its parser rejects (a smuggling attempt, an oversized header, a bad
request line) in plain text from its connection class; these connections answer in JSON.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from agent_eval.proxy.errors import error_body
from agent_eval.shims.aiohttp_server import ErrorAnsweringRunner


def json_error(status: int, message: str | None) -> web.Response:
    """The OpenAI-shaped answer to a request aiohttp could not serve."""
    if status >= 500:
        code, text = "proxy_error", "the proxy failed on this request; see its log"
    else:
        code = "invalid_http"
        text = f"the request is not valid HTTP/1.1 ({message or status}); fix the client"
    return web.Response(
        status=status, body=error_body(status, code, text), content_type="application/json"
    )


class ProxyRunner(ErrorAnsweringRunner):
    """An AppRunner whose connections answer malformed HTTP in OpenAI's error shape."""

    def __init__(self, app: web.Application, **kwargs: Any) -> None:
        super().__init__(app, json_error, **kwargs)
