"""BFCL's verdicts as reward results: the record's `benchmark` holds the entry's category and,
when the answer was wrong, the checker's error type and message (its `detail` says both too)."""

from __future__ import annotations

from agent_eval.rewards.result import RewardResult, RewardStatus


def right(category: str, parsed: str | None) -> RewardResult:
    """BFCL's checker accepted the answer."""
    benchmark = {"category": category, "error_type": None, "error": None}
    return RewardResult(1.0, True, parsed, benchmark=benchmark)


def wrong(
    category: str,
    error_type: str,
    message: str,
    parsed: str | None = None,
    status: RewardStatus = "ok",
) -> RewardResult:
    """BFCL's checker refused the answer with `error_type` (e.g. value_error:string)."""
    benchmark = {"category": category, "error_type": error_type, "error": message}
    detail = f"{error_type}: {message}"
    return RewardResult(0.0, False, parsed, status, detail=detail, benchmark=benchmark)
