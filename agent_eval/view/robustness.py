"""A run's robustness: accuracy on the originals and on each perturbation's variants, and the
samples that break (right on the original, wrong on its variant at the same attempt index)."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from agent_eval.agents.trajectory import question
from agent_eval.metrics import json_ready
from agent_eval.metrics.robustness import Outcomes as SampleOutcomes
from agent_eval.metrics.robustness import (
    RobustnessTally,
    VariantOutcomes,
    by_kind,
    original_accuracy,
    robust_accuracy,
)
from agent_eval.results.files import SAMPLES, SUMMARY
from agent_eval.view.index import Outcomes, RunIndex


@dataclass(frozen=True)
class Pair:
    """An original's attempt and its variant's attempt at the same index, both scored."""

    kind: str
    attempt: int
    original: int
    """The original attempt's row in the index."""
    variant: int


def robustness_body(
    index: RunIndex, summary: dict[str, Any] | None, offset: int, limit: int
) -> dict[str, Any]:
    """The figures (summary.json's robustness group once it holds one, else counted from the
    attempts so far) and one page of the broken pairs, which only the attempts can list."""
    outcomes = index.outcomes()
    pairs = scored_pairs(outcomes)
    written = (summary or {}).get("robustness")
    figures = _written(written) if isinstance(written, dict) else _counted(outcomes)
    broken = [p for p in pairs if outcomes.correct[p.original] and not outcomes.correct[p.variant]]
    return {
        **figures,
        "broken": {
            "total": len(broken),
            "offset": offset,
            "pairs": [_shown(index, pair) for pair in broken[offset : offset + limit]],
        },
    }


def scored_pairs(outcomes: Outcomes) -> list[Pair]:
    """Every (original, variant) attempt pair with both scored, by original, kind and attempt."""
    codes = {name: code for code, name in enumerate(outcomes.samples)}
    scored_at: dict[tuple[int, int], int] = {}
    rows = np.flatnonzero(outcomes.scored)
    samples, attempts = outcomes.sample[rows].tolist(), outcomes.attempt[rows].tolist()
    for row, sample, attempt in zip(rows.tolist(), samples, attempts, strict=True):
        scored_at[sample, attempt] = row  # a later scored record of an attempt wins
    kinds = list(dict.fromkeys(kind for kind in outcomes.kinds if kind))
    keyed: list[tuple[tuple[int, int, int], Pair]] = []
    for (sample, attempt), row in scored_at.items():
        origin, kind = outcomes.origins[sample], outcomes.kinds[sample]
        if origin is None or kind is None or origin not in codes:
            continue
        original = scored_at.get((codes[origin], attempt))
        if original is not None:
            order = (codes[origin], kinds.index(kind), attempt)
            keyed.append((order, Pair(kind, attempt, original, row)))
    return [pair for _, pair in sorted(keyed, key=lambda item: item[0])]


def _written(group: dict[str, Any]) -> dict[str, Any]:
    """summary.json's robustness group in the shape `_counted` gives."""
    by_kind = group.get("by_kind") or {}
    return {
        "source": SUMMARY,
        "original_accuracy": group.get("original_accuracy"),
        "robust_accuracy": group.get("robust_accuracy"),
        "flip_rate": group.get("flip_rate"),
        "kinds": [{"kind": kind, **figures} for kind, figures in by_kind.items()],
    }


def _counted(outcomes: Outcomes) -> dict[str, Any]:
    """The figures of the robustness group as the metrics count them from the attempts so
    far: every one but the drop's interval, which takes summary.json's bootstrap."""
    tally = _tally(outcomes)
    kinds = by_kind(tally, resamples=0)
    appearing = dict.fromkeys(kind for kind in outcomes.kinds if kind)
    return json_ready(
        {
            "source": SAMPLES,
            "original_accuracy": dataclasses.asdict(original_accuracy(tally)),
            "robust_accuracy": dataclasses.asdict(robust_accuracy(tally)),
            "flip_rate": None,
            "kinds": [{"kind": kind, **dataclasses.asdict(kinds[kind])} for kind in appearing],
        }
    )


def _tally(outcomes: Outcomes) -> RobustnessTally:
    """The metrics' robustness tally of the attempts so far: each sample's as bit masks."""
    scored: defaultdict[int, int] = defaultdict(int)
    right: defaultdict[int, int] = defaultdict(int)
    rows = zip(
        outcomes.sample.tolist(),
        outcomes.attempt.tolist(),
        outcomes.correct.tolist(),
        outcomes.scored.tolist(),
        strict=True,
    )
    for code, attempt, correct, counted in rows:
        if counted:
            scored[code] |= 1 << attempt
            right[code] |= (1 << attempt) if correct else 0
    tally = RobustnessTally()
    for code, name in enumerate(outcomes.samples):
        origin, kind = outcomes.origins[code], outcomes.kinds[code]
        if origin is None:
            tally.originals[name] = SampleOutcomes(scored[code], right[code])
        else:
            tally.variants[name] = VariantOutcomes(scored[code], right[code], origin, kind or "")
    return tally


def _shown(index: RunIndex, pair: Pair) -> dict[str, Any]:
    """A broken pair as the page shows it: each side's sample, question and answer."""
    return {"kind": pair.kind, "attempt": pair.attempt} | {
        side: _side(index, row)
        for side, row in (("original", pair.original), ("variant", pair.variant))
    }


def _side(index: RunIndex, row: int) -> dict[str, Any]:
    record = index.record(row)
    return {
        "sample_id": record["sample_id"],
        "index": row,
        "question": question(record.get("trajectory") or {}),
        "answer": record.get("answer"),
    }


def sample_links(index: RunIndex, sample_id: str) -> dict[str, Any]:
    """What a sample's page links to: the original it perturbs, or its variants with each
    attempt's outcome."""
    variant_of, perturbation = index.origin(sample_id)
    outcomes = index.outcomes()
    variants = [
        {
            "sample_id": variant,
            "perturbation": kind,
            "attempts": [
                {
                    "attempt": int(outcomes.attempt[row]),
                    "correct": bool(outcomes.correct[row]) if outcomes.scored[row] else None,
                    "unscored": not outcomes.scored[row],
                }
                for row in index.attempts_of(variant)
            ],
        }
        for variant, kind in index.variants_of(sample_id)
    ]
    return {"variant_of": variant_of, "perturbation": perturbation, "variants": variants}
