"""Harbor's own ATIF examples read into our trajectory's shape and written back: equal to the
original field by field, once the fields our record cannot keep are set aside (the list is
agent_eval/results/exports/atif.py's docstring) and the totals are the steps' sums."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agent_eval.results.exports.atif import from_atif, to_atif
from agent_eval.results.exports.atif_models import SCHEMA_VERSION, Trajectory

DATA = Path(__file__).parent / "data" / "atif"
EXAMPLES = sorted(DATA.glob("*.json"))
NOT_KEPT_ROOT = {"notes", "trajectory_id", "continued_trajectory_ref", "subagent_trajectories"}
NOT_KEPT_STEP = {"timestamp", "reasoning_effort", "is_copied_context", "llm_call_count", "extra",
                 "model_name"}  # fmt: skip
KEPT_METRICS = {"prompt_tokens", "completion_tokens", "cached_tokens"}
IDS = {"prompt_token_ids", "completion_token_ids"}
"""Kept, with `logprobs`, when a step has both: a call's tokens are its prompt's and its own."""


def normalised(document: dict[str, Any]) -> dict[str, Any]:
    """`document` with what our record cannot keep set aside, as the docstring lists it."""
    kept = {key: value for key, value in document.items() if key not in NOT_KEPT_ROOT}
    kept["schema_version"] = SCHEMA_VERSION
    kept["steps"] = [_step(step) for step in document["steps"]]
    kept["final_metrics"] = _sums(kept["steps"])
    return kept


def _step(step: dict[str, Any]) -> dict[str, Any]:
    kept = {key: value for key, value in step.items() if key not in NOT_KEPT_STEP}
    given = step.get("metrics") or {}
    kept_metrics = KEPT_METRICS | (IDS | {"logprobs"} if given.keys() >= IDS else set())
    metrics = {k: v for k, v in given.items() if k in kept_metrics}
    kept.pop("metrics", None)
    if metrics:
        kept["metrics"] = metrics
    for call in kept.get("tool_calls") or ():
        call.pop("extra", None)
    for result in (kept.get("observation") or {}).get("results") or ():
        result.pop("extra", None)
        result.pop("subagent_trajectory_ref", None)
    return kept


def _sums(steps: list[dict[str, Any]]) -> dict[str, int]:
    metrics = [step["metrics"] for step in steps if "metrics" in step]
    sums = {
        "total_prompt_tokens": sum(m.get("prompt_tokens", 0) for m in metrics),
        "total_completion_tokens": sum(m.get("completion_tokens", 0) for m in metrics),
    }
    if any("cached_tokens" in m for m in metrics):
        sums["total_cached_tokens"] = sum(m.get("cached_tokens", 0) for m in metrics)
    return sums


def differences(before: Any, after: Any, where: str = "") -> list[str]:
    """Each path at which `after` differs from `before`."""
    if isinstance(before, dict) and isinstance(after, dict):
        keys = dict.fromkeys([*before, *after])
        return [d for k in keys for d in differences(before.get(k), after.get(k), f"{where}.{k}")]
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [d for i, pair in enumerate(zip(before, after, strict=True))
                for d in differences(*pair, f"{where}[{i}]")]  # fmt: skip
    return [] if before == after else [f"{where}: {before!r} became {after!r}"]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda path: path.stem)
def test_harbor_s_examples_round_trip(example: Path) -> None:
    original = json.loads(example.read_text())
    attempt = from_atif(Trajectory.model_validate(original))
    written = to_atif(attempt).to_json()
    assert not differences(normalised(original), written)
    assert Trajectory.model_validate(written).to_json() == written


def test_the_examples_say_something_once_read() -> None:
    """Each example's steps are messages, model calls and tool calls of ours, not lost."""
    for example in EXAMPLES:
        original = json.loads(example.read_text())
        trajectory = from_atif(Trajectory.model_validate(original)).trajectory
        agents = [s for s in original["steps"] if s["source"] == "agent"]
        assert len(trajectory["model_calls"]) == len(agents), example.name
        calls = sum(len(s.get("tool_calls") or ()) for s in agents)
        assert len(trajectory["tool_calls"]) <= calls
        assert trajectory["final_output"] == agents[-1]["message"], example.name


def test_an_example_keeps_its_tool_calls_and_their_results() -> None:
    rfc = json.loads((DATA / "rfc-0001-example.json").read_text())
    trajectory = from_atif(Trajectory.model_validate(rfc)).trajectory
    calls = trajectory["tool_calls"]
    assert [(c["name"], json.loads(c["arguments"]), c["result"]) for c in calls] == [
        ("financial_search", {"ticker": "GOOGL", "metric": "price"},
         "GOOGL is currently trading at $185.35 (Close: 10/11/2025)"),
        ("financial_search", {"ticker": "GOOGL", "metric": "volume"},
         "GOOGL volume: 1.5M shares traded."),
    ]  # fmt: skip
    assert [c["prompt_tokens"] for c in trajectory["model_calls"]] == [520, 600]
    assert trajectory["model_calls"][0]["cached_tokens"] == 200
    assert "tokens" not in trajectory["model_calls"][1]  # completion ids alone: not a call's


def test_token_ids_and_log_probabilities_are_read_into_the_call_s_tokens() -> None:
    example = DATA / "terminus-2-hello-world-timeout.trajectory.json"
    original = json.loads(example.read_text())
    calls = from_atif(Trajectory.model_validate(original)).trajectory["model_calls"]
    agents = [step["metrics"] for step in original["steps"] if step["source"] == "agent"]
    assert [call["tokens"] for call in calls] == [
        {
            "prompt_ids": metrics["prompt_token_ids"],
            "completion_ids": metrics["completion_token_ids"],
            "logprobs": metrics["logprobs"],
        }
        for metrics in agents
    ]
    assert all(len(call["tokens"]["prompt_ids"]) == call["prompt_tokens"] for call in calls)


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        (lambda d: d["steps"][0].update(step_id=2), "step_id"),
        (lambda d: d["steps"][0].update(tool_calls=[]), "belong to agent steps"),
        (lambda d: d["steps"][1]["observation"]["results"][0].update(source_call_id="x"), "'x'"),
        (lambda d: d.update(schema_version="ATIF-v2.0"), "schema_version"),
        (lambda d: d.update(surprise=1), "surprise"),
        (lambda d: d["steps"][1].update(llm_call_count=0), "no LLM call"),
    ],
)
def test_the_models_refuse_what_the_rfc_forbids(change: Any, complaint: str) -> None:
    document = json.loads((DATA / "rfc-0001-example.json").read_text())
    change(document)
    with pytest.raises(ValidationError, match=complaint):
        Trajectory.model_validate(document)
