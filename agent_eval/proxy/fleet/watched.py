"""Objects that tell a watcher when one of a few attributes changes value.

The pool keeps which workers may take a request up to date from these calls, so a request
costs no scan of the workers; watching a health record's and a breaker's attributes
themselves, not the methods that set them, means no way of changing either escapes the pool.
(A worker's models are told by `Worker.list_models`: its other attributes change per request.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar


class Watched:
    """Calls `changed` after an attribute named in WATCHED takes a different value."""

    WATCHED: ClassVar[frozenset[str]] = frozenset()
    changed: Callable[[], None] | None = None
    """Set by the watcher; a class default, so dataclasses inheriting this do not take it as
    a field."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self.WATCHED or self.changed is None:
            object.__setattr__(self, name, value)
            return
        before = getattr(self, name, value)
        object.__setattr__(self, name, value)
        if before != value:
            self.changed()
