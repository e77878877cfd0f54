"""What one request may ask of the proxy: JSON nested no deeper than the proxy can write it
again, and no more choices than the operator allows."""

from __future__ import annotations

from typing import Any

import orjson

MAX_NESTING = 128
"""Containers nested in one JSON value, its top level counted; serde_json's default too."""
# orjson.loads takes 1,024 levels but orjson.dumps writes 254 at most, and the recorder, the
# prefix policy and the Responses translation write what they were given again, a level or
# two deeper: past MAX_NESTING a value is refused where it enters, never half-way through.
_DUMPS_DEPTH = 254

CHOICE_FIELDS = ("n", "best_of")
"""Request fields that multiply a worker's work for one request."""


class NestingBound:
    """Tells whether parsed JSON nests deeper than MAX_NESTING, for the price of one dumps.

    The value is written at the bottom of lists nested so deep that orjson.dumps fails
    exactly when the value passes MAX_NESTING. The lists are made once and reused: the event
    loop runs one check at a time, and a check never awaits.
    """

    def __init__(self) -> None:
        self._outer: list[Any] = [None]
        self._hole = self._outer
        for _ in range(_DUMPS_DEPTH - MAX_NESTING - 1):
            inner: list[Any] = [None]
            self._hole[0] = inner
            self._hole = inner

    def exceeded(self, value: object) -> bool:
        """Whether `value`, parsed JSON, holds containers nested deeper than MAX_NESTING."""
        self._hole[0] = value
        try:
            orjson.dumps(self._outer)
        except orjson.JSONEncodeError:
            return True
        finally:
            self._hole[0] = None
        return False


def choices_over(payload: dict[str, Any], cap: int) -> str | None:
    """The first choice field asking for more than `cap`; None when none does.

    Counts as servers read them: pydantic takes 5.0 and "5" for 5.
    """
    for field in CHOICE_FIELDS:
        count = _number(payload.get(field))
        if count is not None and count > cap:
            return field
    return None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return float(value)
    except (ValueError, OverflowError):
        return None
