"""Paired comparison: McNemar's exact p, the bootstrap over samples, flips, and --json."""

from __future__ import annotations

import json
import random
from fractions import Fraction
from math import comb
from pathlib import Path

import pytest

from agent_eval.metrics import Pair, mcnemar_exact, paired_differences
from agent_eval.report.compare import mean_difference
from agent_eval.report.paired import paired_comparison
from agent_eval.report.runs import load_run
from tests.helpers.reports import EVIL, Page, make_run, record, report

INFRA = {"kind": "timeout", "class": "infra", "message": "no answer in time"}
KEYS = {"paired", "pairs", "a_only", "b_only", "mcnemar_p", "accuracy_diff", "reward_diff"}


def run_of(path: Path, outcomes: dict[str, list[bool]], **errors: dict[str, str]) -> Path:
    """A run whose sample `id` has one attempt per entry of outcomes[id]; errors by `id_attempt`."""
    records = [
        record(sample_id, attempt, correct, error=errors.get(f"{sample_id}_{attempt}"))
        for sample_id, results in outcomes.items()
        for attempt, correct in enumerate(results)
    ]
    n = len(next(iter(outcomes.values())))
    return make_run(path, records, n_samples=n)


@pytest.mark.parametrize(
    ("a_only", "b_only", "expected"),
    [
        (1, 9, Fraction(2 * (1 + 10), 1024)),  # 0.021484375
        (9, 1, Fraction(2 * (1 + 10), 1024)),
        (0, 5, Fraction(2, 32)),
        (0, 1, Fraction(1)),  # 2 * 1/2, capped at 1
        (5, 5, Fraction(1)),
        (0, 0, Fraction(1)),
        (3, 7, Fraction(2 * (1 + 10 + 45 + 120), 1024)),
    ],
)
def test_mcnemar_p_is_the_exact_two_sided_binomial(
    a_only: int, b_only: int, expected: Fraction
) -> None:
    assert mcnemar_exact(a_only, b_only) == float(expected)


def test_mcnemar_stays_exact_for_many_discordant_pairs() -> None:
    n, k = 3000, 1400
    exact = Fraction(2 * sum(comb(n, i) for i in range(k + 1)), 2**n)
    assert mcnemar_exact(k, n - k) == float(exact)


def correlated(seed: int, samples: int, gain: float) -> list[list[Pair]]:
    """Two attempts per sample; B is A with some wrong answers turned right, so they correlate."""
    rng = random.Random(seed)
    units = []
    for _ in range(samples):
        easy = rng.random()
        pairs = []
        for _ in range(2):
            a = rng.random() < easy
            b = a or rng.random() < gain
            pairs.append(Pair(a, b, float(a), float(b)))
        units.append(pairs)
    return units


def test_the_bootstrap_is_reproducible_and_covers_the_difference() -> None:
    samples = correlated(seed=1, samples=300, gain=0.15)
    first, again = paired_differences(samples), paired_differences(samples)
    assert first == again  # seeded
    diff = first.reward
    pairs = [p for sample in samples for p in sample]
    true = sum(p.b_reward - p.a_reward for p in pairs) / len(pairs)
    assert diff.value == pytest.approx(true)
    assert diff.low < true < diff.high
    assert first.accuracy.value == pytest.approx(true)  # rewards are 0 or 1 here
    assert first.a_only == 0 and first.b_only > 0 and first.mcnemar_p < 1e-6


def test_the_paired_interval_is_narrower_than_the_unpaired_one() -> None:
    samples = correlated(seed=2, samples=200, gain=0.1)
    pairs = [p for sample in samples for p in sample]
    paired = paired_differences(samples).reward
    unpaired = mean_difference([p.b_reward for p in pairs], [p.a_reward for p in pairs])
    assert paired.high - paired.low < 0.5 * (unpaired.high - unpaired.low)
    assert paired.significant and not unpaired.significant


def test_no_pairs_give_no_interval() -> None:
    result = paired_differences([])
    assert result.pairs == 0 and result.mcnemar_p == 1.0
    assert result.accuracy.value != result.accuracy.value  # NaN


def test_the_flips_are_exactly_the_attempts_that_changed(tmp_path: Path) -> None:
    a = run_of(tmp_path / "a", {"s1": [True, True], "s2": [True, False], EVIL: [False, False]})
    b = run_of(tmp_path / "b", {"s1": [True, False], "s2": [False, True], EVIL: [True, False]})
    comparison = paired_comparison(load_run(a), load_run(b))
    assert comparison.paired
    assert comparison.pairing.a_only == [("s1", 1), ("s2", 0)]
    assert comparison.pairing.b_only == [("s2", 1), (EVIL, 0)]
    assert comparison.mcnemar_p == 1.0  # b = c = 2
    assert [row.metric for row in comparison.rows] == ["accuracy", "mean reward"]


def test_a_pair_with_an_unscored_side_is_left_out_and_counted(tmp_path: Path) -> None:
    outcomes = {"s1": [True, True], "s2": [True, True]}
    a = run_of(tmp_path / "a", outcomes, s1_1=INFRA)
    b = run_of(tmp_path / "b", {"s1": [False, False], "s2": [False, True]}, s2_0=INFRA)
    comparison = paired_comparison(load_run(a), load_run(b))
    assert comparison.pairing.left_out_unscored == 2
    assert comparison.pairing.a_only == [("s1", 0)]  # s1#1 and s2#0 are left out
    assert len(comparison.pairing.pairs) == 2


def test_runs_without_shared_samples_are_compared_unpaired(tmp_path: Path) -> None:
    a = run_of(tmp_path / "a", {"s1": [True], "s2": [False]})
    b = run_of(tmp_path / "b", {"t1": [True], "t2": [True]})
    result = report("--compare", a, b, "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["paired"] is False and document["mcnemar_p"] is None
    assert document["method"]["accuracy"] == "unpaired: Newcombe"
    assert document["pairs"] == 0 and document["unmatched"] == 4
    assert document["accuracy_diff"]["value"] == pytest.approx(0.5)
    table = report("--compare", a, b)
    assert "B - A unpaired" in table.output
    assert "compared unpaired" in " ".join(table.output.split())


def test_json_holds_the_paired_comparison_alone_on_stdout(tmp_path: Path) -> None:
    a = run_of(tmp_path / "a", {"s1": [True], "s2": [True], "s3": [False]}, s3_0=INFRA)
    b = run_of(tmp_path / "b", {"s1": [False], "s2": [True], "s3": [True]})
    result = report("--compare", a, b, "--json", "--out", tmp_path / "c.html")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert set(document) >= KEYS
    assert document["paired"] is True and document["pairs"] == 2
    assert document["a_only"] == [{"sample_id": "s1", "attempt": 0}]
    assert document["b_only"] == []
    assert document["mcnemar_p"] == 1.0
    assert document["left_out_unscored"] == 1
    assert document["accuracy_diff"]["value"] == pytest.approx(-0.5)
    assert set(document["reward_diff"]) == {"value", "low", "high", "significant"}
    assert document["resamples"] == 10_000 and document["confidence"] == 0.95
    assert document["report"] == str(tmp_path / "c.html")
    assert "Report:" in result.stderr


def test_the_page_shows_the_paired_section_escaped(tmp_path: Path) -> None:
    a = run_of(tmp_path / "a", {EVIL: [True], "s2": [True]})
    b = run_of(tmp_path / "b", {EVIL: [False], "s2": [True]})
    out = tmp_path / "compare.html"
    result = report("--compare", a, b, "--out", out)
    assert result.exit_code == 0, result.output
    assert "B - A paired by sample and attempt" in result.output
    assert f"right in A only (1): {EVIL}#0" in result.output
    text = out.read_text()
    assert EVIL not in text
    page = Page(text)
    assert page.row("paired", "accuracy")[1:4] == ["1.000", "0.500", "-0.500"]
    assert page.row("flips", "right in A only")[1:] == ["1", f"{EVIL}#0"]


def test_json_without_compare_is_a_mistake(tmp_path: Path) -> None:
    run = run_of(tmp_path / "a", {"s1": [True]})
    result = report(run, "--json")
    assert result.exit_code == 2
    assert "give it with --compare A B" in " ".join(result.stderr.split())


def test_a_path_that_is_not_a_run_ends_in_one_message(tmp_path: Path) -> None:
    a = run_of(tmp_path / "a", {"s1": [True]})
    (tmp_path / "b").mkdir()
    result = report("--compare", a, tmp_path / "b", "--json")
    assert result.exit_code == 2
    assert "not a run directory" in " ".join(result.stderr.split())
    assert "Traceback" not in result.output
    assert result.stdout == ""
