"""The report's count of a benchmark checker's error types per category (BFCL's: why its
answers were wrong), from each wrong attempt's `benchmark`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from html import escape

from agent_eval.metrics import AttemptScore

HEAD = "<tr><th>category</th><th>error type</th><th>wrong attempts</th></tr>"


def checker_errors(scores: Sequence[AttemptScore]) -> Counter[tuple[str, str]]:
    """Wrong scored attempts by (category, error type), as the checker recorded them."""
    found: Counter[tuple[str, str]] = Counter()
    for score in scores:
        benchmark = score.benchmark or {}
        kind, category = benchmark.get("error_type"), benchmark.get("category")
        if score.scored and not score.correct and kind is not None and category is not None:
            found[str(category), str(kind)] += 1
    return found


def checker_errors_section(scores: Sequence[AttemptScore]) -> str:
    """The counts, most first; empty for a run whose checker recorded no error type."""
    counted = checker_errors(scores)
    if not counted:
        return ""
    rows = "".join(
        f"<tr><td>{escape(category)}</td><td>{escape(kind)}</td><td>{count:,}</td></tr>"
        for (category, kind), count in sorted(counted.items(), key=lambda i: (-i[1], i[0]))
    )
    heading = "<h2>Why answers were wrong: the checker's error types</h2>"
    table = f'<table id="checker-error-types">{HEAD}{rows}</table>'
    return f'<section id="checker-errors">{heading}{table}</section>'
