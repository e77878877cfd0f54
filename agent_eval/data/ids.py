"""One id, one item: a run keys each attempt by its sample's id, so an id given twice is refused."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from agent_eval.data.errors import DataError
from agent_eval.data.records import Item, place

ROWS_ADVICE = "give each row an id of its own, or remove the repeated row"


def unique_ids(items: Iterable[Item], advice: str = ROWS_ADVICE) -> Iterator[Item]:
    """The items as they come; an id seen before is a DataError naming both places and `advice`.

    Holds one entry per id read so far: the ids and where they were, never the items.
    """
    first_place: dict[str, str] = {}
    for item in items:
        here = place(item)
        there = first_place.setdefault(item.id, here)
        if there is not here:
            raise DataError(f"{here}: id {item.id!r} is already the id of {there}; {advice}")
        yield item
