"""What /v1/responses keeps around forwarding: stored conversations continued, answers stored."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson

from agent_eval.proxy.exchange import Exchange
from agent_eval.proxy.responses.request import input_items
from agent_eval.proxy.responses.store import ResponseStorage, StoredResponse, Turn, kept_json


class ResponsesRoute:
    """The route's store: a request continues a stored response, and its answer is stored."""

    def __init__(self, store: ResponseStorage) -> None:
        self.store = store

    def continued(self, exchange: Exchange) -> Exchange:
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

    def remember(
        self, exchange: Exchange, worker: str, translated: bool, answer: dict[str, Any] | None
    ) -> None:
        """Store a finished response from `worker`, unless the client asked for `store: false`;
        a translated one with its conversation, which only the proxy holds."""
        if answer is None or exchange.payload.get("store") is False:
            return
        # A worker's answer may hold anything where these fields belong: a list, deep JSON.
        status, response_id = answer.get("status"), answer.get("id")
        if status not in ("completed", "incomplete") or not isinstance(response_id, str):
            return
        if not translated:
            stored = StoredResponse(worker)
        else:
            turn = Turn.after(exchange.history, _added_items(exchange, answer))
            stored = StoredResponse(worker, turn, kept_json(answer))
        self.store.put(response_id, stored)


def _added_items(exchange: Exchange, answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The items a response adds to its conversation: its own input items, then its output."""
    history = exchange.history
    # `continued` put the stored history in front of the input; it is stored already.
    own_input = input_items(exchange.payload.get("input"))[history.count if history else 0 :]
    return [*own_input, *answer.get("output", ())]
