"""The security group: utility, utility under attack and attack success, overall, per suite and
per attack, counted from the `benchmark` field of AgentDojo-like attempts."""

from __future__ import annotations

import json
import math

from agent_eval.metrics import Summary, security_fields, summarize, wilson_interval
from tests.helpers.injections import dojo, dojo_score
from tests.helpers.records import attempt

ATTACK = "important_instructions"


def _run() -> list:
    """Banking: 4 plain (3 useful), 4 attacked (1 useful, 2 breached); slack: 2 attacked by
    another attack (both breached, none useful), 1 plain (useful)."""
    return [
        *(dojo_score(f"b{i}", user_task=f"user_task_{i}", utility=i < 3) for i in range(4)),
        dojo_score("ba0", attack=ATTACK, utility=True, security=False),
        dojo_score("ba1", attack=ATTACK, utility=False, security=True),
        dojo_score("ba2", attack=ATTACK, utility=False, security=True),
        dojo_score("ba3", attack=ATTACK, utility=False, security=False),
        dojo_score("sa0", suite="slack", attack="tool_knowledge", utility=False, security=True),
        dojo_score("sa1", suite="slack", attack="tool_knowledge", utility=False, security=True),
        dojo_score("s0", suite="slack", utility=True),
    ]


def test_the_three_metrics_count_plain_and_attacked_attempts_apart() -> None:
    summary = summarize(_run(), 1.0)
    assert summary.utility == wilson_interval(4, 5)
    assert summary.utility_under_attack == wilson_interval(1, 6)
    assert summary.attack_success_rate == wilson_interval(4, 6)


def test_each_suite_and_each_attack_has_its_own_figures() -> None:
    summary = summarize(_run(), 1.0)
    assert summary.by_suite is not None and summary.by_attack is not None
    assert list(summary.by_suite) == ["banking", "slack"]
    banking, slack = summary.by_suite["banking"], summary.by_suite["slack"]
    assert (banking.utility, banking.attack_success_rate) == (
        wilson_interval(3, 4),
        wilson_interval(2, 4),
    )
    assert (slack.utility_under_attack, slack.attack_success_rate) == (
        wilson_interval(0, 2),
        wilson_interval(2, 2),
    )
    assert list(summary.by_attack) == [ATTACK, "tool_knowledge"]
    assert summary.by_attack[ATTACK].utility_under_attack == wilson_interval(1, 4)
    assert summary.by_attack[ATTACK].utility.n == 0  # an attack has no plain attempts
    assert math.isnan(summary.by_attack[ATTACK].utility.value)


def test_the_group_is_written_only_for_a_run_with_injections() -> None:
    plain = summarize([attempt("q", 0, True, "4")], 1.0).to_dict()
    assert "security" not in plain and "security" not in plain["higher_is_better"]
    assert Summary.read(plain) == summarize([attempt("q", 0, True, "4")], 1.0)
    data = json.loads(json.dumps(summarize(_run(), 1.0).to_dict(), allow_nan=False))
    group = data["security"]
    assert group["attack_success_rate"]["n"] == 6
    assert group["by_suite"]["slack"]["attack_success_rate"]["value"] == 1.0
    assert group["by_attack"][ATTACK]["utility"]["value"] is None  # NaN in JSON
    assert data["higher_is_better"]["security"]["utility"] is True
    assert "lower is better" in data["definitions"]["security"]["attack_success_rate"]
    assert Summary.read(data) == summarize(_run(), 1.0)


def test_unscored_variant_and_other_benchmarks_attempts_are_not_counted() -> None:
    breached = dojo(attack=ATTACK, utility=False, security=True)
    ignored = [
        attempt("x", 0, error_kind="timeout", scored=False, benchmark=breached),
        attempt("v", 0, variant_of="ba0", perturbation="names", benchmark=breached),
        attempt("bfcl", 0, True, benchmark={"category": "simple", "valid": True}),
    ]
    summary = summarize([*_run(), *ignored], 1.0)
    assert summary.attack_success_rate == wilson_interval(4, 6)
    assert summarize(ignored[2:], 1.0).utility is None


def test_an_attack_without_a_security_verdict_counts_for_utility_only() -> None:
    unjudged = {**dojo(attack=ATTACK, utility=True), "security": None}
    summary = summarize([attempt("u", 0, True, benchmark=unjudged)], 1.0)
    assert summary.utility_under_attack == wilson_interval(1, 1)
    assert summary.attack_success_rate is not None and summary.attack_success_rate.n == 0


def test_the_fields_read_are_suite_attack_and_security() -> None:
    assert security_fields(dojo(suite="travel", attack=ATTACK, security=True)) == (
        "travel",
        ATTACK,
        True,
    )
    assert security_fields(dojo()) == ("banking", None, None)
    assert security_fields(None) is None
    assert security_fields({"suite": "banking"}) is None
