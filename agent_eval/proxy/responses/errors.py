"""What the Responses route refuses, each with the status and words the client sees."""

from __future__ import annotations

# bool before int: True is an int to Python, but a boolean to JSON.
JSON_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
    (type(None), "null"),
)


def json_type(value: object) -> str:
    """The JSON name of `value`'s type, as a client reading an error knows it."""
    for kind, name in JSON_TYPES:
        if isinstance(value, kind):
            return name
    return type(value).__name__


class RequestRefused(ValueError):
    """A Responses request the proxy cannot serve as sent; the client must change it."""

    status = 400
    code = "invalid_request"

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(message)


class UnsupportedField(RequestRefused):
    """A request field that has no Chat Completions translation."""

    code = "unsupported_field"

    def __init__(self, field: str, why: str) -> None:
        self.why = why
        super().__init__(field, f"the proxy's /v1/responses cannot serve `{field}`: {why}")


class InvalidType(RequestRefused):
    """A request field whose JSON type is not one the Responses API allows there."""

    code = "invalid_type"

    def __init__(self, field: str, expected: str, value: object) -> None:
        super().__init__(field, f"`{field}` must be {expected}, not {json_type(value)}")


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
