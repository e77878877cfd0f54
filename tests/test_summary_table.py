"""The summary table: headline figures of a known small run, and no row for missing data."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from rich.console import Console

from agent_eval.metrics import AttemptScore, Summary, summarize
from agent_eval.report.table import summary_table
from tests.helpers.injections import dojo_score
from tests.helpers.records import attempt as scored


def attempt(sample_id: str, n: int, correct: bool = False, **kw: Any) -> AttemptScore:
    """A scored attempt whose answer is "1" when right, "0" when wrong."""
    return scored(sample_id, n, correct, answer="1" if correct else "0", **kw)


def rendered(summary: Summary, title: str | None = None) -> str:
    console = Console(record=True, width=100)
    console.print(summary_table(summary, title))
    return console.export_text()


def test_the_table_shows_the_headline_figures_of_a_small_run() -> None:
    scores = [
        attempt("a", 0, True, model_calls=2, tool_calls=3, tool_errors=1),
        attempt("a", 1, True, model_calls=2, tool_calls=1),
        attempt("b", 0, False, model_calls=1, latency_s=3.0, error_kind="timeout"),
        attempt("b", 1, True, model_calls=3),
    ]
    text = rendered(summarize(scores, wall_time_s=2.0, ks=(1, 2)), title="gsm8k")
    lines = [" ".join(line.split()) for line in text.splitlines()]
    assert "gsm8k" in lines[0]
    # 3 of 4: standard error sqrt(0.75 * 0.25 / 4) = 0.217; Wilson 95% interval 0.30 to 0.95
    assert "accuracy 0.750 ± 0.217 [0.30, 0.95]" in lines
    # b ties 1-1 at maj@2 between a wrong and a right answer: half right
    assert {"pass@1 0.750", "pass@2 1.000", "maj@2 0.750", "pass^2 0.500"} <= set(lines)
    assert "reward variance 0.125" in lines  # a: 0; b: 0.25
    assert "latency p50 / p90 / p99 (s) 1.00 / 2.40 / 2.94" in lines
    # 4 attempts of 10 prompt and 5 completion tokens in 2 s: read and generated, each named
    assert {"completion tokens/s 10.0", "prompt tokens/s 20.0", "attempts/s 2.00"} <= set(lines)
    assert "model calls per attempt 2.00" in lines and "tool calls per attempt 1.00" in lines
    assert "tool error rate 0.250" in lines
    assert "errors 1 (25.0%): timeout 1" in lines
    assert "samples 2 · attempts 4" in lines
    assert [line for line in lines if line in ("Quality", "Stability", "Efficiency")] == [
        "Quality",
        "Stability",
        "Efficiency",
    ]


def test_metrics_without_data_are_left_out() -> None:
    text = rendered(summarize([attempt("a", 0, True)], wall_time_s=1.0))
    # One attempt, no sessions, no tool calls: their metrics are NaN and get no row.
    absent = ("nan", "None", "consistency", "variance", "turn", "session", "flip", "tool error")
    assert [word for word in absent if word in text] == []
    assert "accuracy" in text and "tool calls per attempt" in text


def test_session_rows_show_when_the_run_had_sessions() -> None:
    session = {"turn_rewards": [1.0, 0.0], "turn_answers": ["4", "5"], "challenge_turns": [1]}
    text = rendered(summarize([attempt("s", 0, **session)], wall_time_s=1.0))
    lines = [" ".join(line.split()) for line in text.splitlines()]
    assert "accuracy by turn 1..2 1.00 · 0.00" in lines
    assert "session success 0.000" in lines and "flip rate when challenged 1.000" in lines


def test_an_empty_run_renders_without_figures() -> None:
    text = rendered(summarize([], wall_time_s=0.0))
    assert "nan" not in text and "accuracy" not in text and "samples 0 · attempts 0" in text


def test_unscored_attempts_are_named_next_to_the_accuracy_and_in_the_caption() -> None:
    scores = [
        attempt("a", 0, True),
        attempt("a", 1, False),
        attempt("b", 0, True),
        attempt("b", 1, error_kind="no_healthy_worker", scored=False),
        attempt("c", 0, error_kind="no_healthy_worker", scored=False),
    ]
    summary = replace(summarize(scores, wall_time_s=1.0), complete=False)
    lines = [" ".join(line.split()) for line in rendered(summary).splitlines()]
    accuracy = next(line for line in lines if line.startswith("accuracy"))
    assert accuracy.endswith("over 3 scored")
    caption = next(line for line in lines if line.startswith("samples"))
    assert "3 scored; 2 unscored (2 no_healthy_worker)" in caption
    assert "incomplete" in caption


def test_security_rows_show_for_a_run_with_injections_per_suite_and_attack_when_several() -> None:
    attacked = [
        dojo_score("b0"),
        dojo_score("b1", attack="important_instructions", utility=False, security=True),
        dojo_score("s0", suite="slack", attack="important_instructions", security=False),
    ]
    lines = [" ".join(line.split()) for line in rendered(summarize(attacked, 1.0)).splitlines()]
    assert "Security" in lines
    # 1 of 1 plain right; 1 of 2 attacked right; 1 of 2 attacks reached the injected goal.
    assert "utility 1.000 ± 0.000 [0.21, 1.00]" in lines
    assert "utility under attack 0.500 ± 0.354 [0.09, 0.91]" in lines
    assert "attack success rate 0.500 ± 0.354 [0.09, 0.91]" in lines
    assert "attack success rate on slack 0.000 ± 0.000 [0.00, 0.79]" in lines
    assert not any(" by important_instructions" in line for line in lines)  # one attack only
    assert any("targeted attack success rate" in line for line in lines)  # its definition


def test_no_security_rows_without_injections() -> None:
    text = rendered(summarize([attempt("a", 0, True)], wall_time_s=1.0))
    assert "Security" not in text and "attack" not in text
