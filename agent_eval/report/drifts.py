"""The report's list of attempts whose model calls drift: which attempt, and how many of its
turns checked do not continue the earlier call of their conversation token for token."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from agent_eval.metrics import AttemptScore

MAX_DRIFTED = 50
WHERE = "agent-eval view marks each turn that drifts, and where its tokens first differ."
HEAD = "<tr><th>sample</th><th>attempt</th><th>turns that drift</th><th>turns checked</th></tr>"


def drifts_section(scores: Sequence[AttemptScore]) -> str:
    """The attempts with a turn that drifts; empty for a run whose calls have no tokens."""
    checked = [score for score in scores if score.continuity.checked]
    if not checked:
        return ""
    drifted = [score for score in checked if score.continuity.drifted]
    heading = (
        f"<h2>Attempts whose turns drift: {len(drifted)} of {len(checked)} attempts checked</h2>"
    )
    if not drifted:
        return f'<section id="drifts">{heading}</section>'
    more = f"<caption>the first {MAX_DRIFTED}</caption>" if len(drifted) > MAX_DRIFTED else ""
    rows = "".join(_row(score) for score in drifted[:MAX_DRIFTED])
    table = f'<table id="drifted">{more}{HEAD}{rows}</table>'
    return f'<section id="drifts">{heading}{table}<p class="notes">{WHERE}</p></section>'


def _row(score: AttemptScore) -> str:
    counts = score.continuity
    cells = [score.sample_id, str(score.attempt), f"{counts.drifted:,}", f"{counts.checked:,}"]
    return "<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in cells) + "</tr>"
