"""Objectives: metrics of summary.json by dotted path, each to maximise or minimise (tune)."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agent_eval.errors import ConfigError
from agent_eval.metrics.summary import DIRECTIONS, summarize
from agent_eval.settings import value_at

Direction = Literal["maximize", "minimize"]
DEFAULT_OBJECTIVE = "quality.accuracy:max"
_DIRECTIONS: dict[str, Direction] = {
    "max": "maximize",
    "maximize": "maximize",
    "min": "minimize",
    "minimize": "minimize",
}

_NOT_METRICS = {"higher_is_better", "unscored_by_kind", "by_kind", "n"}
"""Parts of summary.json that are no figure to optimise: directions, tallies by kind, counts."""
_LEAF_DIRECTIONS: dict[str, Direction] = {"wall_time_s": "minimize"}
"""Figures whose group's direction is not theirs (throughput is better high, its time low)."""


@dataclass(frozen=True)
class Objective:
    """One metric of a trial's summary.json and which way is better."""

    metric: str
    direction: Direction

    @property
    def maximize(self) -> bool:
        return self.direction == "maximize"

    @property
    def arrow(self) -> str:
        return "↑" if self.direction == "maximize" else "↓"

    def value(self, summary: Mapping[str, Any]) -> float | None:
        """The metric in a summary.json mapping; None when the run has no figure for it."""
        found = value_at(summary, self.metric)  # a number, an estimate, or None
        if isinstance(found, Mapping):
            found = found.get("value")  # an estimate: its point value
        if not isinstance(found, int | float) or isinstance(found, bool):
            return None
        return None if math.isnan(found) else float(found)

    def better(self, a: float, b: float) -> bool:
        """Whether `a` beats `b`."""
        return a > b if self.direction == "maximize" else a < b

    def as_record(self) -> dict[str, str]:
        return {"metric": self.metric, "direction": self.direction}


def parse_objectives(specs: Sequence[str], ks: Sequence[int]) -> list[Objective]:
    """`metric[:max|:min]` each, checked against summary.json's metrics; default accuracy."""
    known = set(metric_paths(ks))
    objectives = [_parse(spec, known) for spec in specs or [DEFAULT_OBJECTIVE]]
    metrics = [objective.metric for objective in objectives]
    if len(set(metrics)) != len(metrics):
        raise ConfigError(f"--objective names a metric twice ({', '.join(metrics)}); once each")
    return objectives


def metric_paths(ks: Sequence[int]) -> Iterator[str]:
    """Every number summary.json holds, by dotted path, for a run with these k values."""
    summary = summarize([], 1.0, tuple(ks)).to_dict()
    for group in DIRECTIONS:
        # A group only some runs have (security) is in no empty run's summary: not an objective.
        yield from _leaves(summary.get(group, {}), f"{group}.")


def _leaves(data: Mapping[str, Any], prefix: str) -> Iterator[str]:
    for key, value in data.items():
        path = f"{prefix}{key}"
        if key in _NOT_METRICS:
            continue
        if isinstance(value, Mapping) and "value" not in value:
            yield from _leaves(value, f"{path}.")
        elif not isinstance(value, (list, bool, str)):
            yield path


def _parse(spec: str, known: set[str]) -> Objective:
    metric, _, way = spec.strip().partition(":")
    if metric not in known:
        close = difflib.get_close_matches(metric, sorted(known), n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(
            f"--objective {spec!r}: {metric!r} is not a metric of summary.json{hint} "
            "(e.g. quality.accuracy, efficiency.tokens.mean_completion, efficiency.latency_s.p90)"
        )
    if way:
        if way.lower() not in _DIRECTIONS:
            raise ConfigError(f"--objective {spec!r}: end it with :max or :min, not :{way}")
        return Objective(metric, _DIRECTIONS[way.lower()])
    return Objective(metric, _default_direction(metric, spec))


def _default_direction(metric: str, spec: str) -> Direction:
    if (leaf := metric.rpartition(".")[2]) in _LEAF_DIRECTIONS:
        return _LEAF_DIRECTIONS[leaf]
    group, _, rest = metric.partition(".")
    higher = DIRECTIONS.get(group, {}).get(rest.partition(".")[0])
    if higher is None:
        raise ConfigError(f"--objective {spec!r}: say which way is better, {metric}:max or :min")
    return "maximize" if higher else "minimize"
