"""aiohttp's own `100 Continue`, for an expect handler that answers other expectations itself.

A route's `expect_handler` replaces aiohttp's default, the private
`web_urldispatcher._default_expect_handler`: on HTTP/1.1 it writes `HTTP/1.1 100 Continue` and
resets the writer's `output_size`, so the answer that follows still counts as unsent. aiohttp
has no public way to send that interim answer. Checked against aiohttp 3.14.5.
"""

from __future__ import annotations

from aiohttp import web
from aiohttp.web_urldispatcher import _default_expect_handler


async def send_continue(request: web.Request) -> None:
    """Tell a client that sent `Expect: 100-continue` to send its body."""
    await _default_expect_handler(request)
