"""What the Responses route refuses beyond unsupported fields and wrong types."""

from __future__ import annotations

from agent_eval.proxy.fields import RequestRefused


class PreviousResponseNotFound(RequestRefused):
    """`previous_response_id` names a response the proxy does not hold."""

    status = 404
    code = "previous_response_not_found"

    def __init__(self, response_id: str) -> None:
        super().__init__(
            "previous_response_id",
            f"no stored response has id {response_id!r}: it was made with `store: false`, "
            "expired from the proxy's store, or predates a restart of the proxy; "
            "send the whole conversation in `input` instead",
        )
