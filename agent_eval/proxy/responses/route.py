"""What /v1/responses needs beyond forwarding: stored history, translation, remembering."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import orjson

from agent_eval.proxy.exchange import Exchange
from agent_eval.proxy.responses.native import NativeFailure
from agent_eval.proxy.responses.request import input_items
from agent_eval.proxy.responses.store import ResponseStore, StoredResponse, Turn, kept_json
from agent_eval.proxy.responses.translation import Translation
from agent_eval.proxy.worker import Worker

log = logging.getLogger(__name__)

RESPONSES_ROUTE = "/v1/responses"
CHAT_ROUTE = "/v1/chat/completions"
# What a server answers to a POST it has no route for (405: the path exists, not for POST).
MISSING_ROUTE_STATUSES = frozenset({404, 405})


class ResponsesRoute:
    """Serves /v1/responses on every worker: natively where it can, translated where not."""

    def __init__(self, store: ResponseStore) -> None:
        self.store = store

    @staticmethod
    def handles(exchange: Exchange) -> bool:
        return exchange.info.route == RESPONSES_ROUTE

    def prepare(self, exchange: Exchange) -> Exchange:
        """The exchange with a stored conversation in front of its input, and routed after it.

        Raises: RequestRefused when `input` is malformed.
        """
        previous = exchange.payload.get("previous_response_id")
        stored = self.store.get(previous) if isinstance(previous, str) else None
        if stored is None:
            # Unknown here: a native worker may hold it; a translated one answers 404.
            return exchange
        info = replace(exchange.info, prefer=stored.worker)
        history = stored.conversation
        if history is None:
            return replace(exchange, info=info)
        payload = {k: v for k, v in exchange.payload.items() if k != "previous_response_id"}
        payload["input"] = [*history.conversation(), *input_items(exchange.payload.get("input"))]
        body = orjson.dumps(payload)
        return replace(exchange, payload=payload, body=body, info=info, history=history)

    def translation(self, exchange: Exchange, worker: Worker) -> Translation | None:
        """The translation to send `worker`, or None when it gets the request as it is.

        Raises: RequestRefused when the request has no Chat Completions form.
        """
        if not self.handles(exchange) or worker.serves_responses is not False:
            return None
        return Translation.of(exchange.payload)

    def stream_ending(self, exchange: Exchange) -> NativeFailure | None:
        """How a native stream on this route ends if it breaks; None for other routes."""
        return NativeFailure(exchange.payload) if self.handles(exchange) else None

    def lacks_route(
        self, exchange: Exchange, worker: Worker, translation: Translation | None, status: int
    ) -> bool:
        """True (and remembered) when a worker of unknown kind turned out not to serve the route.

        A worker known to be native keeps its 404s: they mean an unknown model or response.
        """
        if not self.handles(exchange) or translation is not None:
            return False
        if worker.serves_responses is not None:
            return False
        if status not in MISSING_ROUTE_STATUSES:
            return False
        log.info("worker %s has no /v1/responses; translating to Chat Completions", worker.url)
        worker.serves_responses = False
        return True

    def remember(
        self,
        exchange: Exchange,
        worker: Worker,
        translation: Translation | None,
        answer: dict[str, Any] | None,
    ) -> None:
        """Store a finished response, unless the client asked for `store: false`."""
        if answer is None or exchange.payload.get("store") is False:
            return
        # A worker's answer may hold anything where these fields belong: a list, deep JSON.
        status, response_id = answer.get("status"), answer.get("id")
        if status not in ("completed", "incomplete") or not isinstance(response_id, str):
            return
        if translation is None:
            stored = StoredResponse(worker.url)
        else:
            turn = Turn.after(exchange.history, _added_items(exchange, answer))
            stored = StoredResponse(worker.url, turn, kept_json(answer))
        self.store.put(response_id, stored)


def _added_items(exchange: Exchange, answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The items a response adds to its conversation: its own input items, then its output."""
    history = exchange.history
    # `prepare` put the stored history in front of the input; it is stored already.
    own_input = input_items(exchange.payload.get("input"))[history.count if history else 0 :]
    return [*own_input, *answer.get("output", ())]
