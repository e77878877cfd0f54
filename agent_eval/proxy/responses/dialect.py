"""How a /v1/responses request goes to one worker: as sent to a worker that serves the route,
translated to Chat Completions for one that does not."""

from __future__ import annotations

import logging

from agent_eval.proxy.exchange import Exchange
from agent_eval.proxy.fleet.worker import Worker
from agent_eval.proxy.responses.native import NativeFailure
from agent_eval.proxy.responses.translation import Translation

log = logging.getLogger(__name__)

RESPONSES_ROUTE = "/v1/responses"
CHAT_ROUTE = "/v1/chat/completions"
# What a server answers to a POST it has no route for (405: the path exists, not for POST).
MISSING_ROUTE_STATUSES = frozenset({404, 405})


def is_responses(exchange: Exchange) -> bool:
    """Whether the exchange is a Responses API request."""
    return exchange.info.route == RESPONSES_ROUTE


def translation_for(exchange: Exchange, worker: Worker) -> Translation | None:
    """The translation to send `worker`, or None when it gets the request as it is.

    Raises: RequestRefused when the request has no Chat Completions form.
    """
    if not is_responses(exchange) or worker.serves_responses is not False:
        return None
    return Translation.of(exchange.payload)


def stream_ending(exchange: Exchange) -> NativeFailure | None:
    """How a native stream on this route ends if it breaks; None for other routes."""
    return NativeFailure(exchange.payload) if is_responses(exchange) else None


def lacks_route(
    exchange: Exchange, worker: Worker, translation: Translation | None, status: int
) -> bool:
    """True (and remembered) when a worker of unknown kind turned out not to serve the route.

    A worker known to be native keeps its 404s: they mean an unknown model or response.
    """
    if not is_responses(exchange) or translation is not None:
        return False
    if worker.serves_responses is not None:
        return False
    if status not in MISSING_ROUTE_STATUSES:
        return False
    log.info("worker %s has no /v1/responses; translating to Chat Completions", worker.url)
    worker.serves_responses = False
    return True
