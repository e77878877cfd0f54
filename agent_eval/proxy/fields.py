"""A translated request's fields read with their JSON types checked; what cannot be served is
refused with the status and words the client sees."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

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
    """A request the proxy cannot serve as sent; the client must change it."""

    status = 400
    code = "invalid_request"

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(message)


class UnsupportedField(RequestRefused):
    """A request field that has no Chat Completions translation."""

    code = "unsupported_field"

    def __init__(self, route: str, field: str, why: str) -> None:
        self.why = why
        super().__init__(field, f"the proxy's {route} cannot serve `{field}`: {why}")


class InvalidType(RequestRefused):
    """A request field whose JSON type is not one the route's API allows there."""

    code = "invalid_type"

    def __init__(self, field: str, expected: str, value: object) -> None:
        super().__init__(field, f"`{field}` must be {expected}, not {json_type(value)}")


class Fields:
    """Reads one route's request fields: each of the JSON types it may have, or refused."""

    def __init__(self, route: str) -> None:
        self.route = route

    def unsupported(self, field: str, why: str) -> UnsupportedField:
        """The refusal of `field` on this route, saying `why`."""
        return UnsupportedField(self.route, field, why)

    def check_top_level(
        self,
        body: dict[str, Any],
        handled: Mapping[str, tuple[str, ...]],
        passed: Collection[str],
        refused: Mapping[str, str],
    ) -> None:
        """Refuse a field that is neither `handled` (of its JSON types) nor `passed` by, with
        `refused`'s reason for it; an unknown field is refused too, never dropped unseen."""
        for field, value in body.items():
            if value is None or field in passed:
                continue
            if field in handled:
                typed(value, field, *handled[field])
                continue
            why = refused.get(field, "it has no Chat Completions translation; leave it out")
            raise self.unsupported(field, why)

    def required(self, obj: dict[str, Any], key: str, where: str, *kinds: str) -> Any:
        """`obj[key]`, of one of the JSON types `kinds`; missing, it is a 400 naming it."""
        if obj.get(key) is None:
            raise self.unsupported(f"{where}.{key}", "it is missing, and is required")
        return typed(obj[key], f"{where}.{key}", *kinds)

    def optional(self, obj: dict[str, Any], key: str, where: str, *kinds: str) -> Any:
        """`obj[key]`, of one of the JSON types `kinds`; None when absent or null."""
        value = obj.get(key)
        return None if value is None else typed(value, f"{where}.{key}", *kinds)


def typed(value: Any, where: str, *kinds: str) -> Any:
    """`value` when its JSON type is one of `kinds` ("number" takes integers too)."""
    found = json_type(value)
    if found in kinds or (found == "integer" and "number" in kinds):
        return value
    raise InvalidType(where, " or ".join(_a(kind) for kind in kinds), value)


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"
