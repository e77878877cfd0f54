"""A record's messages in the one shape the sample page draws (results/messages.py)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from agent_eval.results.messages import messages


def drawable(record: dict[str, Any]) -> dict[str, Any]:
    """A samples.jsonl line's dict with its trajectory's messages in the page's one shape."""
    trajectory = record.get("trajectory") or {}
    shaped = [asdict(message) for message in messages(trajectory.get("messages") or ())]
    return {**record, "trajectory": {**trajectory, "messages": shaped}}
