"""The rows query of the API: its URL parameters checked and turned into an index query."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from agent_eval.view.index import ORIGINAL, RANGED, SORTABLE, Filter
from agent_eval.view.refused import ParameterError

MAX_LIMIT = 1000
BOUNDS = {f"{side}_{name}": name for name in RANGED for side in ("min", "max")}
KNOWN = {"outcome", "worker", "q", "perturbation", "sort", "desc", "offset", "limit", *BOUNDS}
WINDOW = {"offset", "limit"}


@dataclass(frozen=True)
class Query:
    """One page of rows to fetch: which attempts, in what order, from where."""

    where: Filter
    sort: str = "row"
    descending: bool = False
    offset: int = 0
    limit: int = 50


def parse_query(params: Mapping[str, str], perturbations: Collection[str]) -> Query:
    """The query the parameters ask for, over a run with variants of these `perturbations`;
    an unknown or malformed parameter is a ParameterError."""
    _known(params, KNOWN)
    perturbation = params.get("perturbation")
    if perturbation and perturbation != ORIGINAL and perturbation not in perturbations:
        kinds = ", ".join([ORIGINAL, *perturbations])
        raise ParameterError("perturbation", f"no {perturbation!r} variants here; use {kinds}")
    sort = params.get("sort") or "row"
    if sort not in SORTABLE:
        raise ParameterError("sort", f"sort by one of {', '.join(SORTABLE)}")
    return Query(
        where=_filter(params),
        sort=sort,
        descending=_flag(params, "desc"),
        offset=_integer(params, "offset", 0, 0, None),
        limit=_integer(params, "limit", 50, 1, MAX_LIMIT),
    )


def parse_window(params: Mapping[str, str], limit: int) -> tuple[int, int]:
    """The offset and limit (`limit` unless given) of a list; any other parameter is refused."""
    _known(params, WINDOW)
    return _integer(params, "offset", 0, 0, None), _integer(params, "limit", limit, 1, MAX_LIMIT)


def _known(params: Mapping[str, str], known: set[str]) -> None:
    for name in params:
        if name not in known:
            raise ParameterError(name, f"unknown parameter; use one of {', '.join(sorted(known))}")


def _filter(params: Mapping[str, str]) -> Filter:
    ranges: dict[str, tuple[float | None, float | None]] = {}
    for key, column in BOUNDS.items():
        if params.get(key):
            low, high = ranges.get(column, (None, None))
            bound = _number(params, key)
            ranges[column] = (bound, high) if key.startswith("min_") else (low, bound)
    return Filter(
        outcome=params.get("outcome") or None,
        worker=params.get("worker") or None,
        ranges=ranges,
        text=params.get("q") or None,
        perturbation=params.get("perturbation") or None,
    )


def _number(params: Mapping[str, str], name: str) -> float:
    try:
        return float(params[name])
    except ValueError:
        raise ParameterError(name, f"not a number: {params[name]!r}") from None


def _integer(params: Mapping[str, str], name: str, default: int, low: int, high: int | None) -> int:
    text = params.get(name)
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ParameterError(name, f"not a whole number: {text!r}") from None
    if value < low or (high is not None and value > high):
        raise ParameterError(name, f"must lie in [{low}, {high if high is not None else '...'}]")
    return value


def _flag(params: Mapping[str, str], name: str) -> bool:
    text = params.get(name, "0").lower()
    if text not in ("0", "1", "true", "false", ""):
        raise ParameterError(name, f"give 1 or 0, not {text!r}")
    return text in ("1", "true")
