"""Metrics: known values, brute-force enumerations, empty inputs and seeded property checks."""

from __future__ import annotations

import dataclasses
import json
import math
import random
import statistics
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from itertools import combinations, pairwise
from typing import Any

import pytest
from agents.tool import default_tool_error_function

from agent_eval.agents.calculator import divide
from agent_eval.agents.trajectory import ModelCallRecord, ToolCallRecord, Trajectory
from agent_eval.data import Session, Turn
from agent_eval.metrics import (
    DIRECTIONS,
    AttemptScore,
    Estimate,
    RunTally,
    SessionTally,
    Summary,
    accuracy,
    accuracy_difference,
    call_summary,
    consistency,
    error_summary,
    flip_rate,
    is_higher_better,
    is_tool_error,
    latency_summary,
    maj_at_k,
    mean_pass_at_k,
    mean_pass_hat_k,
    mean_reward,
    mean_turn_reward,
    normalize_answer,
    pass_at_k,
    pass_hat_k,
    percentile,
    reward_variance,
    session_success,
    summarize,
    throughput,
    token_summary,
    top_answers,
    turn_accuracy,
    wilson_interval,
)
from agent_eval.run.engine import attempt_record
from agent_eval.run.scoring import Scored
from tests.helpers.injections import dojo_score
from tests.helpers.records import attempt
from tests.helpers.token_calls import conversation, record_with_tokens


def answered(sample_id: str, answers: list[str | None], correct: set[str]) -> list[AttemptScore]:
    """One sample's attempts in attempt order; an answer in `correct` is marked correct."""
    return [attempt(sample_id, i, a in correct, a) for i, a in enumerate(answers)]


def random_run(rng: random.Random, samples: int, n: int) -> list[AttemptScore]:
    """A run where each sample has its own success rate and a few wrong answers to vote on."""
    scores = []
    for s in range(samples):
        rate = rng.random()
        for i in range(n):
            ok = rng.random() < rate
            answer = "gold" if ok else rng.choice(["a", "b", None])
            scores.append(
                attempt(
                    f"s{s}",
                    i,
                    ok,
                    answer,
                    reward=rng.choice([0.0, 0.5, 1.0]),
                    latency_s=rng.choice([0.25, 0.5, 2.0, 8.0]),
                    error_kind=None if answer else rng.choice(["timeout", "parse"]),
                )
            )
    return scores


# pass@k and pass^k against every k-subset


@pytest.mark.parametrize("n", range(1, 8))
def test_pass_at_k_and_pass_hat_k_match_enumeration_of_k_subsets(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            subsets = list(combinations(range(n), k))  # attempts 0..c-1 are the correct ones
            any_ok = sum(any(i < c for i in s) for s in subsets) / len(subsets)
            all_ok = sum(all(i < c for i in s) for s in subsets) / len(subsets)
            assert pass_at_k(n, c, k) == pytest.approx(any_ok, abs=1e-12), (n, c, k)
            assert pass_hat_k(n, c, k) == pytest.approx(all_ok, abs=1e-12), (n, c, k)


def test_pass_hat_k_is_one_when_all_correct_and_zero_when_fewer_correct_than_k() -> None:
    assert pass_hat_k(10, 10, 7) == 1.0
    assert pass_hat_k(10, 3, 4) == 0.0
    assert pass_at_k(10, 0, 5) == 0.0
    assert pass_at_k(10, 6, 5) == 1.0  # n - c < k: every 5-subset holds a correct attempt


def test_pass_at_k_is_stable_for_large_n() -> None:
    # C(1000, 500) overflows a float; the product form does not.
    assert pass_at_k(1000, 1, 500) == pytest.approx(0.5)
    assert pass_hat_k(1000, 999, 500) == pytest.approx(0.5)


def test_k_above_n_names_k_and_the_smallest_n() -> None:
    with pytest.raises(ValueError, match=r"k=4 .* smallest sample has n=3"):
        mean_pass_at_k([(5, 1), (3, 0), (4, 4)], 4)
    with pytest.raises(ValueError, match=r"k=4 .* smallest sample has n=3"):
        mean_pass_hat_k([(5, 1), (3, 0)], 4)
    # A run's summary takes pass@k over the samples with k scored attempts: an attempt the
    # infrastructure stopped leaves its sample short, which says nothing of the model.
    scores = answered("a", ["1", "2"], {"1"}) + answered("b", ["1"], {"1"})
    assert summarize(scores, 1.0, ks=(1, 2)).pass_at_k == {1: 0.75, 2: 1.0}


def test_bad_per_sample_counts_are_rejected() -> None:
    with pytest.raises(ValueError, match="c <= n"):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError, match="1 <= k <= n"):
        pass_hat_k(3, 1, 0)
    with pytest.raises(ValueError, match="k must be at least 1"):
        mean_pass_at_k([(3, 1)], 0)
    with pytest.raises(ValueError, match="positive integer"):
        summarize([], 1.0, ks=(1, 0))


# Accuracy intervals


def test_wilson_interval_matches_hand_computed_values() -> None:
    # 8/10 at 95%: centre (0.8 + z²/20)/(1 + z²/10), half-width z/(1 + z²/10)·sqrt(0.016 + z²/400).
    estimate = accuracy(8, 10)
    assert estimate.value == 0.8 and estimate.n == 10
    assert estimate.low == pytest.approx(0.4902, abs=1e-4)
    assert estimate.high == pytest.approx(0.9433, abs=1e-4)
    # 0/10: the upper bound is z²/(n + z²).
    zero = wilson_interval(0, 10)
    z2 = 1.959963984540054**2
    assert zero.low == 0.0 and zero.high == pytest.approx(z2 / (10 + z2))
    assert wilson_interval(10, 10).high == 1.0
    wider = wilson_interval(8, 10, confidence=0.99)
    assert wider.low < estimate.low and wider.high > estimate.high


def test_accuracy_carries_the_binomial_standard_error() -> None:
    assert accuracy(8, 10).stderr == pytest.approx(math.sqrt(0.8 * 0.2 / 10))  # 0.1265
    assert accuracy(0, 10).stderr == 0.0 and accuracy(10, 10).stderr == 0.0
    assert accuracy(8, 10, confidence=0.99).stderr == accuracy(8, 10).stderr


def test_wilson_rejects_impossible_input() -> None:
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(11, 10)
    with pytest.raises(ValueError, match="confidence"):
        wilson_interval(1, 10, confidence=1.0)


def test_newcombe_difference_matches_the_published_example() -> None:
    # Newcombe (1998), Stat. Med. 17:873, example 56/70 vs 48/80, method 10: 0.0524 to 0.3339.
    diff = accuracy_difference(accuracy(56, 70), accuracy(48, 80))
    assert diff.value == pytest.approx(0.2)
    assert diff.low == pytest.approx(0.0524, abs=1e-4)
    assert diff.high == pytest.approx(0.3339, abs=1e-4)
    assert diff.significant
    swapped = accuracy_difference(accuracy(48, 80), accuracy(56, 70))
    assert (swapped.low, swapped.high) == pytest.approx((-diff.high, -diff.low))


def test_a_difference_within_the_noise_is_not_significant() -> None:
    diff = accuracy_difference(accuracy(50, 100), accuracy(55, 100))
    assert diff.low < 0 < diff.high and not diff.significant
    big = accuracy_difference(accuracy(500, 1000), accuracy(550, 1000))
    assert big.high < 0 and big.significant  # the same gap with 10x the attempts is real


# Majority vote and agreement


def vote_of(attempts: Sequence[tuple[str | None, bool]]) -> Fraction:
    """How right the most frequent answer of these attempts is, by the definition itself: a tie
    of t answers is a fair pick, an answer is as right as its attempts here; no answer, no vote."""
    votes = Counter(normalize_answer(answer) for answer, _ in attempts)
    votes.pop(None, None)
    if not votes:
        return Fraction(sum(ok for _, ok in attempts), len(attempts))
    most = max(votes.values())
    top = [answer for answer, count in votes.items() if count == most]
    right = [
        Fraction(sum(ok for a, ok in attempts if normalize_answer(a) == answer), most)
        for answer in top
    ]
    return sum(right, Fraction(0)) / len(top)


def enumerated_maj_at_k(attempts: Sequence[tuple[str | None, bool]], k: int) -> Fraction:
    subsets = list(combinations(attempts, k))
    return sum((vote_of(subset) for subset in subsets), Fraction(0)) / len(subsets)


def test_maj_at_k_matches_enumeration_of_k_subsets() -> None:
    rng = random.Random(29)
    for _ in range(300):
        n = rng.randint(1, 8)
        # A lenient reward can mark one answer right on one attempt and wrong on another.
        attempts = [(rng.choice(["1", "2", " 2", "3", None]), rng.random() < 0.4) for _ in range(n)]
        scores = [attempt("a", i, ok, answer) for i, (answer, ok) in enumerate(attempts)]
        samples = list(RunTally().extend(scores).samples.values())
        for k in range(1, n + 1):
            expected = float(enumerated_maj_at_k(attempts, k))
            assert maj_at_k(samples, k) == pytest.approx(expected, abs=1e-15), (attempts, k)


def test_maj_at_1_is_pass_at_1_to_the_last_bit() -> None:
    for seed in range(20):
        summary = summarize(random_run(random.Random(seed), samples=13, n=3), 1.0, ks=(1, 3))
        assert summary.maj_at_k[1] == summary.pass_at_k[1], seed


def test_a_tie_of_t_answers_counts_one_over_t() -> None:
    two_each = answered("a", ["19", "48", "19", "48"], {"48"})
    three_ways = answered("b", ["1", "2", "3"], {"2"})
    assert top_answers(["19", "48", "19 ", "48"]) == ["19", "48"]
    assert maj_at_k(list(RunTally().extend(two_each).samples.values()), 4) == 0.5
    assert maj_at_k(list(RunTally().extend(three_ways).samples.values()), 3) == pytest.approx(1 / 3)


def test_maj_at_k_normalises_answers_and_lets_no_answer_abstain() -> None:
    assert top_answers([" 42", None, None, "42 ", "41"]) == ["42"]
    assert top_answers(["A  b", "a b", "c"]) == ["a b"]
    assert top_answers([None, ""]) == []
    mixed = answered("a", [None, " 42", None], {" 42"})
    assert maj_at_k(list(RunTally().extend(mixed).samples.values()), 3) == 1.0
    # A reward that parses no answer leaves nothing to vote on: k attempts count as their mean.
    silent = [attempt("b", i, ok) for i, ok in enumerate([True, False, False])]
    tally = list(RunTally().extend(silent).samples.values())
    assert [maj_at_k(tally, k) for k in (1, 2, 3)] == pytest.approx([1 / 3] * 3)


def test_maj_at_k_is_the_same_whatever_the_arrival_order() -> None:
    scores = answered("a", ["7", "7", "3", "3", "3"], {"7"})
    forward = list(RunTally().extend(scores).samples.values())
    backward = list(RunTally().extend(reversed(scores)).samples.values())
    for k in range(1, 6):
        assert maj_at_k(forward, k) == maj_at_k(backward, k), k


def test_maj_at_k_of_many_attempts_takes_little_work() -> None:
    # 64 attempts in eight answers of eight: a shape whose draws are too many to list.
    scores = answered("a", [str(i % 8) for i in range(64)], {"0"})
    samples = list(RunTally().extend(scores).samples.values())
    assert maj_at_k(samples, 64) == pytest.approx(1 / 8)
    assert maj_at_k(samples, 1) == 1 / 8


def test_consistency_counts_samples_whose_attempts_agree() -> None:
    scores = (
        answered("same", ["x", " X", "x"], {"x"})
        + answered("differ", ["x", "y"], set())
        + answered("no answer", ["x", None], set())
        + answered("single", ["x"], set())  # one attempt agrees trivially: left out
    )
    assert consistency(RunTally().extend(scores).samples.values()) == pytest.approx(1 / 3)


def test_reward_variance_is_the_mean_of_per_sample_population_variances() -> None:
    scores = [
        *(attempt("a", i, reward=r) for i, r in enumerate([1.0, 0.0, 1.0, 0.0])),  # 0.25
        *(attempt("b", i, reward=r) for i, r in enumerate([0.5, 0.5])),  # 0
        attempt("single", 0, reward=1.0),  # one attempt has no spread: left out
    ]
    assert reward_variance(RunTally().extend(scores).samples.values()) == 0.125
    three = [attempt("c", i, reward=r) for i, r in enumerate([1.0, 0.0, 0.5])]
    # mean 0.5, squared deviations 0.25 + 0.25 + 0: population variance 1/6, not 1/4
    assert reward_variance(RunTally().extend(three).samples.values()) == pytest.approx(1 / 6)
    singles = RunTally().extend([attempt("a", 0), attempt("b", 0, reward=1.0)])
    assert math.isnan(reward_variance(singles.samples.values()))


def test_session_success_and_mean_turn_reward() -> None:
    sessions = SessionTally()
    for turns in ([1.0, 1.0], [1.0, 0.5], []):
        sessions.add(turns)
    assert sessions.sessions == 2  # a session without turns is not counted
    assert session_success(sessions) == 0.5
    assert mean_turn_reward(sessions) == pytest.approx(3.5 / 4)
    single_turn = attempt("c", 0, True, "x", turn_rewards=None)
    summary = summarize([*answered("a", ["x"], set()), single_turn], 1.0)
    assert summary.sessions == 0 and math.isnan(summary.session_success)
    assert summary.turn_accuracy == [] and math.isnan(summary.flip_rate)


def test_turn_accuracy_and_flip_rate_by_hand() -> None:
    sessions = SessionTally()
    # (turn rewards, parsed answers, challenge turns)
    sessions.add([1.0, 1.0, 0.0, 1.0], ["84", "168", "160", "148"], [2])  # 168 -> 160: flip
    sessions.add([1.0, 1.0, 1.0], ["75", " 75", "50"], [1])  # same once normalised: kept
    sessions.add([0.0, 0.0], [None, "3"], [1])  # nothing to keep before it: not counted
    sessions.add([1.0, 0.0], ["7", None], [1])  # no answer to the challenge: flip
    sessions.add([1.0], ["5"], [0])  # a challenge as the first turn: not counted
    # turn 1: 4 of 5 right; turn 2: 2 of 4; turn 3: 1 of 2; turn 4: 1 of 1
    assert turn_accuracy(sessions) == [0.8, 0.5, 0.5, 1.0]
    assert flip_rate(sessions) == pytest.approx(2 / 3)


def test_flip_rate_is_undefined_without_challenges() -> None:
    sessions = SessionTally()
    sessions.add([1.0, 1.0], ["1", "2"])
    assert math.isnan(flip_rate(sessions)) and turn_accuracy(sessions) == [1.0, 1.0]


# Latency, tokens, throughput, errors


def test_latency_percentiles_interpolate_linearly() -> None:
    latency = latency_summary([float(x) for x in range(10, 0, -1)])
    assert (latency.n, latency.mean, latency.max) == (10, 5.5, 10.0)
    assert (latency.p50, latency.p90, latency.p99) == pytest.approx((5.5, 9.1, 9.91))
    assert latency_summary([3.0]).p99 == 3.0


def test_percentile_agrees_with_statistics_inclusive_quantiles() -> None:
    rng = random.Random(7)
    for _ in range(50):
        values = sorted(rng.expovariate(1.0) for _ in range(rng.randint(2, 40)))
        cuts = statistics.quantiles(values, n=100, method="inclusive")
        for i, cut in enumerate(cuts, start=1):
            assert percentile(values, i / 100) == pytest.approx(cut)


def test_tokens_throughput_and_errors() -> None:
    tokens = token_summary(prompt_tokens=300, completion_tokens=100, attempts=4)
    assert (tokens.total, tokens.mean_prompt, tokens.mean_completion) == (400, 75.0, 25.0)
    rates = throughput(4, tokens, wall_time_s=2.0)
    assert (rates.attempts_per_s, rates.completion_tokens_per_s, rates.prompt_tokens_per_s) == (
        2.0,
        50.0,
        150.0,
    )
    errors = error_summary({"parse": 1, "timeout": 2, "http": 1}, attempts=8)
    assert list(errors.by_kind.items()) == [("timeout", 2), ("http", 1), ("parse", 1)]
    assert (errors.total, errors.rate) == (4, 0.5)


def test_calls_per_attempt_and_tool_error_rate() -> None:
    calls = call_summary(model_calls=6, tool_calls=4, tool_errors=1, attempts=2)
    assert (calls.model_calls_per_attempt, calls.tool_calls_per_attempt) == (3.0, 2.0)
    assert calls.tool_error_rate == 0.25
    no_tools = call_summary(model_calls=2, tool_calls=0, tool_errors=0, attempts=2)
    assert no_tools.tool_calls_per_attempt == 0.0 and math.isnan(no_tools.tool_error_rate)


def test_tool_errors_are_read_from_the_result_the_model_saw() -> None:
    assert is_tool_error(divide(1, 0))  # our calculator's convention
    assert is_tool_error(default_tool_error_function(None, ValueError("x")))  # the SDK's
    assert not is_tool_error(str(divide(6, 3))) and not is_tool_error("")


def test_a_record_carries_what_the_metrics_need() -> None:
    session = Session("s", [Turn("6*7?", "42"), Turn("Are you sure?", challenge=True)])
    trajectory = Trajectory(
        tool_calls=[
            ToolCallRecord("multiply", '{"a": 6, "b": 7}', "42.0"),
            ToolCallRecord("divide", '{"a": 1, "b": 0}', str(divide(1, 0))),
        ],
        model_calls=[ModelCallRecord(0.1), ModelCallRecord(0.1), ModelCallRecord(0.1)],
    )
    scores = Scored(0.5, False, "41", [1.0, 0.0], ["42", "41"], failure=None)
    score = attempt_record(session, 0, 1, "s-0", trajectory, scores, 0.5).score()
    assert (score.turn_rewards, score.turn_answers, score.challenge_turns) == (
        [1.0, 0.0],
        ["42", "41"],
        [1],
    )
    assert (score.model_calls, score.tool_calls, score.tool_errors) == (3, 2, 1)


# Empty input and the summary


def test_every_metric_guards_empty_input() -> None:
    empty = accuracy(0, 0)
    assert empty.n == 0 and all(math.isnan(x) for x in (empty.value, empty.low, empty.high))
    assert math.isnan(mean_reward(0.0, 0))
    assert math.isnan(mean_pass_at_k([], 5)) and math.isnan(mean_pass_hat_k([], 5))
    assert math.isnan(maj_at_k([], 3)) and math.isnan(consistency([]))
    assert math.isnan(session_success(SessionTally()))
    assert math.isnan(mean_turn_reward(SessionTally())) and turn_accuracy(SessionTally()) == []
    assert math.isnan(flip_rate(SessionTally())) and math.isnan(reward_variance([]))
    assert math.isnan(call_summary(0, 0, 0, 0).model_calls_per_attempt)
    latency = latency_summary([])
    assert latency.n == 0 and math.isnan(latency.p50) and math.isnan(latency.max)
    assert math.isnan(token_summary(0, 0, 0).mean_prompt)
    assert math.isnan(throughput(3, token_summary(1, 1, 3), wall_time_s=0.0).attempts_per_s)
    assert math.isnan(error_summary({}, 0).rate)
    assert not accuracy_difference(accuracy(0, 0), accuracy(3, 4)).significant


def test_empty_run_summarises_to_valid_json_with_nulls() -> None:
    data = summarize([], wall_time_s=0.0, ks=(1, 5)).to_dict()
    text = json.dumps(data, allow_nan=False)  # raises if a NaN slipped through
    assert json.loads(text)["quality"]["accuracy"] == dict.fromkeys(
        ("value", "stderr", "low", "high"), None
    ) | {"n": 0}
    assert data["quality"]["pass_at_k"] == {"1": None, "5": None} and data["samples"] == 0
    assert data["robustness"]["flip_rate"] is None
    assert data["efficiency"]["calls"]["tool_error_rate"] is None


def test_summary_json_is_grouped_with_a_direction_for_every_metric() -> None:
    scores = [
        attempt("a", 0, True, "1"),
        dojo_score("b", attack="important_instructions"),
        record_with_tokens("c", 0, conversation(2)).score(),
    ]
    data = summarize(scores, 1.0).to_dict()
    groups = ("quality", "stability", "robustness", "efficiency", "security", "continuity")
    size = ["samples", "attempts", "scored", "unscored", "unscored_by_kind", "sessions"]
    assert list(data) == [*size, "complete", "seed", *groups, "higher_is_better", "definitions"]
    assert list(data["higher_is_better"]) == list(groups)
    for group in groups:
        assert list(data[group]) == list(data["higher_is_better"][group])
    grouped = [name for group in groups for name in data[group]]
    fields = [field.name for field in dataclasses.fields(Summary)]
    assert sorted([*size, "complete", "seed", *grouped]) == sorted(fields)
    assert data["higher_is_better"]["robustness"]["flip_rate"] is False
    assert "a tie of t answers counts 1/t" in data["definitions"]["quality"]["maj_at_k"]
    assert data["higher_is_better"]["security"]["attack_success_rate"] is False
    assert Summary.read(data) == summarize(scores, 1.0)


def test_unscored_attempts_cost_but_do_not_count() -> None:
    clean = [*answered("a", ["4", "4"], {"4"}), *answered("b", ["x", "7"], {"7"})]
    stopped = attempt("b", 2, error_kind="no_healthy_worker", scored=False, latency_s=9.0)
    summary = summarize([*clean, stopped], 10.0, ks=(1, 2))
    same = summarize(clean, 10.0, ks=(1, 2))
    assert (summary.attempts, summary.scored, summary.unscored) == (5, 4, 1)
    assert summary.unscored_by_kind == {"no_healthy_worker": 1}
    for name in ("accuracy", "mean_reward", "pass_at_k", "pass_hat_k", "maj_at_k", "consistency"):
        assert getattr(summary, name) == getattr(same, name), name
    assert summary.latency_s != same.latency_s  # it took time all the same
    assert summary.errors.by_kind == {"no_healthy_worker": 1}


def test_a_sample_short_of_k_scored_attempts_leaves_pass_at_k() -> None:
    scores = [*answered("a", ["4", "4"], {"4"}), *answered("b", ["x"], set())]
    stopped = attempt("b", 1, error_kind="timeout", scored=False)
    summary = summarize([*scores, stopped], 1.0, ks=(1, 2))
    assert summary.pass_at_k[2] == 1.0  # b has one scored attempt: only a has two
    assert summary.pass_at_k[1] == 0.5


def test_summary_of_a_small_run() -> None:
    scores = [
        *answered("a", ["4", "4", "5"], {"4"}),
        *answered("b", ["x", "y", None], set()),
        attempt("c", 0, True, "1", turn_rewards=[1.0], model_calls=2, tool_calls=3, tool_errors=1),
        attempt("c", 1, False, None, error_kind="timeout", latency_s=9.0, model_calls=7),
        attempt(
            "c", 2, True, "1", turn_rewards=[1.0, 0.0], turn_answers=["1", "2"], challenge_turns=[1]
        ),
    ]
    summary = summarize(scores, wall_time_s=3.0, ks=(1, 3))
    assert (summary.samples, summary.attempts) == (3, 9)
    assert summary.accuracy.value == pytest.approx(4 / 9)
    assert summary.pass_at_k[3] == pytest.approx(2 / 3)  # a and c have a correct attempt
    assert summary.pass_hat_k[3] == 0.0
    assert summary.maj_at_k[3] == pytest.approx(2 / 3)  # a: "4"; c: "1" (None abstains)
    assert summary.maj_at_k[1] == summary.pass_at_k[1]
    assert summary.consistency == 0.0
    assert (summary.sessions, summary.session_success) == (2, 0.5)
    assert summary.turn_accuracy == [1.0, 0.0] and summary.flip_rate == 1.0
    # per-sample rewards a: 1, 1, 0 (variance 2/9); b: 0, 0, 0 (0); c: 1, 0, 1 (2/9)
    assert summary.reward_variance == pytest.approx(4 / 27)
    assert summary.errors.by_kind == {"timeout": 1}
    assert summary.throughput.attempts_per_s == 3.0 and summary.tokens.total == 135
    assert (summary.calls.model_calls_per_attempt, summary.calls.tool_error_rate) == (1.0, 1 / 3)
    data = json.loads(json.dumps(summary.to_dict(), allow_nan=False))
    assert data["quality"]["maj_at_k"]["3"] == pytest.approx(2 / 3)
    assert data["stability"]["pass_hat_k"]["3"] == 0.0


def test_a_repeated_attempt_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"'a' has attempt 1 twice"):
        summarize([attempt("a", 1), attempt("a", 1)], 1.0)


def test_every_metric_declares_its_direction() -> None:
    assert is_higher_better(accuracy) and is_higher_better(mean_pass_at_k)
    assert not is_higher_better(latency_summary) and not is_higher_better(error_summary)
    assert all(isinstance(d, bool) for group in DIRECTIONS.values() for d in group.values())
    assert not is_higher_better(flip_rate) and not is_higher_better(reward_variance)
    with pytest.raises(TypeError, match="declares no direction"):
        is_higher_better(percentile)


# Properties over seeded random runs


def test_pass_at_1_equals_accuracy_when_samples_have_equal_n() -> None:
    rng = random.Random(1)
    for _ in range(30):
        n = rng.randint(1, 8)
        summary = summarize(random_run(rng, rng.randint(1, 12), n), 1.0, ks=(1,))
        assert summary.pass_at_k[1] == pytest.approx(summary.accuracy.value)
        assert summary.pass_hat_k[1] == pytest.approx(summary.accuracy.value)


def test_pass_at_k_rises_and_pass_hat_k_falls_with_k() -> None:
    rng = random.Random(2)
    for _ in range(200):
        n = rng.randint(1, 20)
        counts = [(n, rng.randint(0, n)) for _ in range(rng.randint(1, 6))]
        at = [mean_pass_at_k(counts, k) for k in range(1, n + 1)]
        hat = [mean_pass_hat_k(counts, k) for k in range(1, n + 1)]
        assert all(x <= y + 1e-12 for x, y in pairwise(at))
        assert all(x >= y - 1e-12 for x, y in pairwise(hat))
        assert all(h <= a + 1e-12 for h, a in zip(hat, at, strict=True))
        assert all(0.0 <= v <= 1.0 for v in at + hat)


def test_wilson_interval_contains_the_estimate() -> None:
    rng = random.Random(3)
    for _ in range(500):
        n = rng.randint(1, 500)
        estimate = wilson_interval(rng.randint(0, n), n, confidence=rng.choice([0.8, 0.95, 0.99]))
        assert 0.0 <= estimate.low <= estimate.value <= estimate.high <= 1.0


def test_summary_is_independent_of_record_order() -> None:
    rng = random.Random(4)
    for _ in range(20):
        scores = random_run(rng, rng.randint(1, 10), rng.randint(3, 6))
        shuffled = scores[:]
        rng.shuffle(shuffled)
        first = summarize(scores, 2.0, ks=(1, 2, 3)).to_dict()
        assert summarize(iter(shuffled), 2.0, ks=(1, 2, 3)).to_dict() == first


def test_two_runs_compare_from_their_summary_json() -> None:
    def run(right: int) -> dict[str, Any]:
        scores = [attempt(f"s{i}", 0, i < right, "x") for i in range(400)]
        return json.loads(json.dumps(summarize(scores, 1.0).to_dict()))

    a, b, c = (Estimate(**run(right)["quality"]["accuracy"]) for right in (240, 200, 230))
    assert accuracy_difference(a, b).significant  # 60% vs 50% of 400
    assert not accuracy_difference(a, c).significant  # 60% vs 57.5%
    assert accuracy_difference(a, b).value == pytest.approx(0.1)
