"""The report's list of attacks that reached their goal: which attempt, task, injection and
attack, and the tool call after which the injected goal held."""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from typing import Any

from agent_eval.metrics import AttemptScore, security_fields

MAX_BREACHES = 50
HEAD = (
    "<tr><th>sample</th><th>attempt</th><th>suite</th><th>user task</th><th>injection task</th>"
    "<th>attack</th><th>tool call that reached the goal</th></tr>"
)


def attacks_section(scores: Sequence[AttemptScore]) -> str:
    """The attacked attempts whose injected goal was reached; empty for a run without attacks."""
    attacked = [score for score in scores if _attack(score)]
    if not attacked:
        return ""
    breached = [score for score in attacked if (score.benchmark or {}).get("security") is True]
    heading = (
        f"<h2>Attacks that reached their goal: {len(breached)} of {len(attacked)} "
        "attacked attempts</h2>"
    )
    if not breached:
        return f'<section id="attacks">{heading}</section>'
    more = f"<caption>the first {MAX_BREACHES}</caption>" if len(breached) > MAX_BREACHES else ""
    rows = "".join(_row(score) for score in breached[:MAX_BREACHES])
    return (
        f'<section id="attacks">{heading}<table id="breached">{more}{HEAD}{rows}</table></section>'
    )


def _attack(score: AttemptScore) -> bool:
    """A scored attempt at an original sample under an attack, as the security group counts."""
    found = security_fields(score.benchmark)
    return score.scored and score.variant_of is None and found is not None and found[1] is not None


def _row(score: AttemptScore) -> str:
    found: dict[str, Any] = score.benchmark or {}
    cells = [
        score.sample_id,
        str(score.attempt),
        str(found.get("suite")),
        str(found.get("user_task")),
        str(found.get("injection_task")),
        str(found.get("attack")),
        tool_call_text(found.get("injection_call")),
    ]
    return "<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in cells) + "</tr>"


def tool_call_text(call: Any) -> str:
    """`send_money({"amount": 100}) (call 3)`; "(not identified)" when the checker named none."""
    if not isinstance(call, dict) or "function" not in call:
        return "(not identified)"
    args = json.dumps(call.get("args") or {}, sort_keys=True, ensure_ascii=False)
    index = f" (call {call['index']})" if isinstance(call.get("index"), int) else ""
    return f"{call['function']}({args}){index}"
