"""A run's robustness: accuracy on the originals and on each perturbation's variants, and the
samples that break (right on the original, wrong on its variant at the same attempt index)."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from agent_eval.agents.trajectory import question
from agent_eval.metrics import mcnemar_exact, wilson_interval
from agent_eval.results import SAMPLES, SUMMARY
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
    figures = _written(written) if isinstance(written, dict) else _counted(outcomes, pairs)
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


def _counted(outcomes: Outcomes, pairs: list[Pair]) -> dict[str, Any]:
    """The figures of the robustness group counted from the attempts: every one but the drop's
    interval, which takes summary.json's bootstrap."""
    sample_kinds = [kind or "" for kind in outcomes.kinds]
    attempt_kinds = [sample_kinds[code] for code in outcomes.sample.tolist()]
    right: defaultdict[str, int] = defaultdict(int)
    scored: defaultdict[str, int] = defaultdict(int)
    for kind, correct, counted in zip(
        attempt_kinds, outcomes.correct.tolist(), outcomes.scored.tolist(), strict=True
    ):
        scored[kind] += counted
        right[kind] += counted and correct
    originals = {
        name for name, origin in zip(outcomes.samples, outcomes.origins, strict=True) if not origin
    }
    kinds = []
    for kind in dict.fromkeys(kind for kind in sample_kinds if kind):
        perturbed = {o for o, k in zip(outcomes.origins, sample_kinds, strict=True) if k == kind}
        of_kind = [pair for pair in pairs if pair.kind == kind]
        kinds.append(
            {
                "kind": kind,
                "accuracy": _estimate(right[kind], scored[kind]),
                "variants": len(perturbed),
                "skipped": len(originals - perturbed),
                **_paired(outcomes, of_kind),
            }
        )
    return {
        "source": SAMPLES,
        "original_accuracy": _estimate(right[""], scored[""]),
        "robust_accuracy": _robust(outcomes),
        "flip_rate": None,
        "kinds": kinds,
    }


def _paired(outcomes: Outcomes, pairs: list[Pair]) -> dict[str, Any]:
    """A kind's pairs: how many, how many broke and were fixed, the drop and McNemar's p."""
    broke = sum(
        bool(outcomes.correct[p.original] and not outcomes.correct[p.variant]) for p in pairs
    )
    fixed = sum(
        bool(outcomes.correct[p.variant] and not outcomes.correct[p.original]) for p in pairs
    )
    drop = {"value": (broke - fixed) / len(pairs), "low": None, "high": None} if pairs else None
    return {
        "pairs": len(pairs),
        "broke": broke,
        "fixed": fixed,
        "drop": drop,
        "mcnemar_p": mcnemar_exact(broke, fixed) if pairs else None,
    }


def _robust(outcomes: Outcomes) -> dict[str, Any]:
    """Over (original, attempt index) units whose original has variants, each of them scored
    at that index (as summary.json counts): right on the original and on every variant."""
    at = {
        (code, attempt): row
        for row, (code, attempt) in enumerate(
            zip(outcomes.sample.tolist(), outcomes.attempt.tolist(), strict=True)
        )
    }
    variants: defaultdict[str, list[int]] = defaultdict(list)
    for code, origin in enumerate(outcomes.origins):
        if origin is not None:
            variants[origin].append(code)
    right = units = 0
    for (code, attempt), row in at.items():
        own = variants.get(outcomes.samples[code], []) if outcomes.origins[code] is None else []
        unit = [row, *(at.get((variant, attempt)) for variant in own)]
        if not own or any(r is None or not outcomes.scored[r] for r in unit):
            continue
        units += 1
        right += all(outcomes.correct[r] for r in unit)
    return _estimate(right, units)


def _estimate(right: int, n: int) -> dict[str, Any]:
    """Accuracy with its Wilson interval, as summary.json writes an Estimate."""
    return dataclasses.asdict(wilson_interval(right, n))


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
                    "correct": bool(outcomes.correct[row]),
                    "unscored": not outcomes.scored[row],
                }
                for row in index.attempts_of(variant)
            ],
        }
        for variant, kind in index.variants_of(sample_id)
    ]
    return {"variant_of": variant_of, "perturbation": perturbation, "variants": variants}
