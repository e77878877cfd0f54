"""JSON for the fuzz tests: any JSON value, and valid bodies with some of their fields changed."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import strategies as st

# Removes the field it is put at, instead of setting it.
DELETE = object()

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=10,
)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path (keys and indexes) of every value nested in `value`."""
    if isinstance(value, dict):
        children = list(value.items())
    elif isinstance(value, list):
        children = list(enumerate(value))
    else:
        children = []
    found = []
    for key, child in children:
        found += [(*prefix, key), *paths(child, (*prefix, key))]
    return found


def mutated(body: dict[str, Any], changes: list[tuple[tuple[Any, ...], Any]]) -> dict[str, Any]:
    """A copy of `body` with each path set to its value (or deleted); paths gone are skipped."""
    body = orjson.loads(orjson.dumps(body))
    for path, value in changes:
        parent: Any = body
        for key in path[:-1]:
            parent = _child(parent, key)
        key = path[-1]
        if isinstance(parent, dict) or (isinstance(parent, list) and _index(key, parent)):
            if value is DELETE:
                parent.pop(key) if isinstance(parent, list) else parent.pop(key, None)
            else:
                parent[key] = value
    return body


def _child(parent: Any, key: Any) -> Any:
    if isinstance(parent, dict):
        return parent.get(key)
    if isinstance(parent, list) and _index(key, parent):
        return parent[key]
    return None


def _index(key: Any, items: list[Any]) -> bool:
    return isinstance(key, int) and key < len(items)
