"""summary.json: the one summary builder, and the versioned file it writes and every reader reads.

A run's rates are measured, not counted from its records: the attempts and tokens the process
that finished it played, over that process's wall time. The engine measures them; every other
builder (report, rescore, tune) takes them as summary.json holds them, so the same files give
the same figures whoever builds the summary.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from agent_eval.metrics import AttemptCounts, AttemptScore, Summary, summarize
from agent_eval.metrics.performance import Throughput, throughput, token_summary
from agent_eval.results.files import SUMMARY, RunDirectory
from agent_eval.seeds import SeedScope

log = logging.getLogger(__name__)

SUMMARY_SCHEMA = 1
"""The version of summary.json; a file without `schema_version` predates it and reads as 0."""

UNMEASURED = throughput(0, token_summary(0, 0, 0), math.nan)
"""The rates of a run whose summary.json is missing or unreadable: not measured (null)."""


def measured_rates(played: AttemptCounts, wall_time_s: float) -> Throughput:
    """The rates of the attempts played in `wall_time_s` seconds, with their tokens."""
    tokens = token_summary(played.prompt_tokens, played.completion_tokens, played.attempts)
    return throughput(played.attempts, tokens, wall_time_s)


def build_summary(
    scores: Iterable[AttemptScore],
    ks: Sequence[int],
    rates: Throughput,
    complete: bool = True,
    seed: SeedScope | None = None,
) -> Summary:
    """Every figure of a run's attempts (their records' scores), with its measured rates; k > the
    smallest n is a ValueError, as is an attempt recorded twice."""
    summary = summarize(scores, rates.wall_time_s, ks)
    return replace(summary, throughput=rates, complete=complete, seed=seed)


def summary_json(summary: Summary) -> dict[str, Any]:
    """summary.json's content: the summary grouped by dimension, after its version."""
    return {"schema_version": SUMMARY_SCHEMA, **summary.to_dict()}


def write_summary(run_dir: RunDirectory, summary: Summary) -> Path:
    """Write summary.json atomically: the one place that writes it."""
    return run_dir.write_json(SUMMARY, summary_json(summary))


def read_summary(path: Path) -> Summary | None:
    """A summary.json of this version or an earlier one; None when it is absent, being replaced,
    corrupt, or of a newer version (each but the first logged)."""
    try:
        data = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, orjson.JSONDecodeError) as exc:
        log.info("%s is unreadable (%s)", path, exc)
        return None
    if not isinstance(data, dict):
        return None
    version = data.pop("schema_version", 0)
    if not isinstance(version, int) or version > SUMMARY_SCHEMA:
        log.warning("%s has schema_version %r, newer than this agent-eval reads", path, version)
        return None
    return Summary.read(data)


def stored_rates(path: Path) -> Throughput | None:
    """The rates summary.json holds; None without a readable one."""
    summary = read_summary(path)
    return None if summary is None else summary.throughput
