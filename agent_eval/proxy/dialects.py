"""How a request on a route some workers lack goes to one worker: as sent to a worker that
serves the route, translated (to Chat Completions, or a tokenizer) for one that does not."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from agent_eval.proxy.exchange import Exchange
from agent_eval.proxy.fields import RequestRefused
from agent_eval.proxy.fleet.worker import Worker
from agent_eval.proxy.messages.assemble import MessageAssembler
from agent_eval.proxy.messages.native import MessagesNativeFailure
from agent_eval.proxy.messages.translation import CountTranslation, MessagesTranslation
from agent_eval.proxy.responses.native import NativeFailure
from agent_eval.proxy.responses.translation import Translation as ResponsesTranslation
from agent_eval.proxy.routes import (
    COUNT_TOKENS_ROUTE,
    MESSAGES_ROUTE,
    MISSING_ROUTE_STATUSES,
    RESPONSES_ROUTE,
)
from agent_eval.proxy.upstream.assemble import StreamAssembler
from agent_eval.proxy.upstream.streaming import BreakEnding, Follower, Relay

log = logging.getLogger(__name__)


class Translation(Protocol):
    """One request as what a worker lacking its route is sent instead, and the way back."""

    @property
    def route(self) -> str:
        """Where the translated request goes."""

    @property
    def body(self) -> bytes:
        """The translated request."""

    def answer(self, body: bytes) -> dict[str, Any]:
        """The client's answer for the worker's. Raises: ValueError when it is malformed."""

    def relay(self, max_event_bytes: int, max_stream_bytes: int | None = None) -> Relay:
        """A relay turning the worker's stream into the client's events."""

    def refused(self, status: int) -> RequestRefused | None:
        """The refusal a worker's error `status` means for this translation; None to pass
        the worker's error on."""


@dataclass(frozen=True)
class Dialect:
    """One route served natively or translated: how to translate it, how a native stream of
    it ends when it breaks, and whether a native answer is followed (to be stored)."""

    translate: Callable[[dict[str, Any]], Translation]
    ending: Callable[[dict[str, Any]], BreakEnding] | None = None
    follow: bool = False
    assembler: Callable[[], Follower] = StreamAssembler
    """What assembles a native stream's answer when it is followed."""


DIALECTS: dict[str, Dialect] = {
    RESPONSES_ROUTE: Dialect(ResponsesTranslation.of, NativeFailure, follow=True),
    MESSAGES_ROUTE: Dialect(
        MessagesTranslation.of, MessagesNativeFailure, assembler=MessageAssembler
    ),
    COUNT_TOKENS_ROUTE: Dialect(CountTranslation.of),
}


def translation_for(exchange: Exchange, worker: Worker) -> Translation | None:
    """The translation to send `worker`, or None when it gets the request as it is.

    Raises: RequestRefused when the request has no translation.
    """
    dialect = DIALECTS.get(exchange.info.route)
    if dialect is None or worker.native.get(exchange.info.route) is not False:
        return None
    return dialect.translate(exchange.payload)


def stream_ending(exchange: Exchange) -> BreakEnding | None:
    """How a native stream on this route ends if it breaks; None for the chat routes."""
    dialect = DIALECTS.get(exchange.info.route)
    if dialect is None or dialect.ending is None:
        return None
    return dialect.ending(exchange.payload)


def follows(exchange: Exchange) -> bool:
    """Whether a native answer on this route is followed whatever the recorder wants."""
    dialect = DIALECTS.get(exchange.info.route)
    return dialect is not None and dialect.follow


def assembler_for(exchange: Exchange) -> Follower:
    """What assembles a passed-through stream's answer on this route."""
    dialect = DIALECTS.get(exchange.info.route)
    return dialect.assembler() if dialect is not None else StreamAssembler()


def lacks_route(
    exchange: Exchange, worker: Worker, translation: Translation | None, status: int
) -> bool:
    """True (and remembered) when a worker of unknown kind turned out not to serve the route.

    A worker known to be native keeps its 404s: they mean an unknown model or response.
    """
    route = exchange.info.route
    if route not in DIALECTS or translation is not None or route in worker.native:
        return False
    if status not in MISSING_ROUTE_STATUSES:
        return False
    log.info("worker %s has no %s; translating it", worker.url, route)
    worker.native[route] = False
    return True
