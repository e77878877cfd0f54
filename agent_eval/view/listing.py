"""What the API says of a run: its row in the runs table, its errors and workers."""

from __future__ import annotations

import math
from typing import Any

from agent_eval.failures import failure_class
from agent_eval.metrics import accuracy
from agent_eval.report.runs import WorkerLoad
from agent_eval.view.index import Filter, RunIndex
from agent_eval.view.runs import RunDir, described, started, status


def run_row(run: RunDir, summary: dict[str, Any] | None, index: RunIndex | None) -> dict[str, Any]:
    """The run's row: counts from summary.json once finished, else from the live index."""
    about = described(run)
    return {
        "id": run.id,
        "path": str(run.path),
        "agent": about.agent,
        "model": about.model,
        "dataset": about.dataset,
        **(_from_summary(summary) if summary else _from_index(index)),
        "status": status(run),
        "started": started(run),
        "kind": run.kind,
    }


def _from_summary(summary: dict[str, Any]) -> dict[str, Any]:
    found = summary.get("quality", {}).get("accuracy")
    return {
        "attempts": summary.get("attempts", 0),
        "scored": summary.get("scored", 0),
        "unscored": summary.get("unscored", 0),
        "accuracy": _interval(found["value"], found["low"], found["high"]) if found else None,
    }


def _from_index(index: RunIndex | None) -> dict[str, Any]:
    if index is None:
        return {"attempts": 0, "scored": 0, "unscored": 0, "accuracy": None}
    unscored = index.count(Filter(outcome="unscored"))
    correct = index.count(Filter(outcome="correct"))
    scored = len(index) - unscored
    found = accuracy(correct, scored)
    return {
        "attempts": len(index),
        "scored": scored,
        "unscored": unscored,
        "accuracy": _interval(found.value, found.low, found.high) if scored else None,
    }


def _interval(value: float | None, low: float | None, high: float | None) -> dict[str, Any] | None:
    if value is None or math.isnan(value):
        return None
    return {"value": value, "low": low, "high": high}


def errors_by_kind(index: RunIndex) -> dict[str, int]:
    """How many attempts each error kind stopped."""
    return {kind: index.count(Filter(outcome=kind)) for kind in index.kinds}


def attempts_by_worker(index: RunIndex) -> dict[str, int]:
    """How many attempts made a model call on each worker."""
    return {worker: index.count(Filter(worker=worker)) for worker in index.workers}


def error_rows(index: RunIndex) -> list[dict[str, Any]]:
    """Each error kind: how many attempts it stopped, and whether it is the model's failure."""
    return [
        {"kind": kind, "count": count, "class": failure_class(kind).value}
        for kind, count in errors_by_kind(index).items()
    ]


def worker_rows(index: RunIndex, loads: list[WorkerLoad] | None) -> list[dict[str, Any]]:
    """Each worker: attempts that called it, and what the proxy counted of it (when it did)."""
    counted = {load.url: load for load in loads or ()}
    attempts = attempts_by_worker(index)
    names = [*attempts, *(url for url in counted if url not in attempts)]
    return [
        {"worker": name, "attempts": attempts.get(name, 0), **_load(counted.get(name))}
        for name in names
    ]


def _load(load: WorkerLoad | None) -> dict[str, Any]:
    if load is None:
        return {"served": None, "failures": None, "healthy": None, "breaker": None}
    return {
        "served": load.served,
        "failures": load.failures,
        "healthy": load.healthy,
        "breaker": load.breaker,
    }
