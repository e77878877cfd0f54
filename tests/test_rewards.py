"""Reward scoring: GSM8K gold, math-verify decisions, the process pool, timeouts and plug-ins.

The reward functions at the top run inside worker processes, which import them by the path
`tests.test_rewards:NAME`.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest

from agent_eval.data import DataError, load_dataset
from agent_eval.errors import ConfigError
from agent_eval.rewards import (
    RewardPoolError,
    RewardResult,
    RewardScorer,
    gold_check,
    gsm8k_gold,
    load_reward,
    score_math,
)
from agent_eval.rewards.math_answer import math_gold_problem
from agent_eval.run.scoring import with_readable_golds
from tests.helpers.shared_data import gsm8k_path
from tests.helpers.waits import eventually


def slow_reward(prediction: str, gold: str) -> bool:
    """Exact match, except that the prediction "sleep" hangs (for ten minutes: only a kill ends
    it within a test)."""
    if prediction == "sleep":
        time.sleep(600)
    return prediction.strip() == gold.strip()


def marker_reward(prediction: str, gold: str) -> float:
    """ "block:PATH" creates PATH and hangs; "once:PATH" hangs only if PATH did not exist yet."""
    mode, _, path = prediction.partition(":")
    marker = Path(path)
    if mode == "block" or not marker.exists():
        marker.touch()
        time.sleep(30)
    return 1.0


def mixed_reward(prediction: str, gold: str) -> object:
    """Returns whatever kind of value the prediction names, to test normalisation."""
    if prediction == "raise":
        raise ValueError("broken reward")
    if prediction == "exit":
        os._exit(3)  # a crash in native code looks like this to the pool
    return {"true": True, "false": False, "float": 0.25, "one": 1, "str": "yes"}[prediction]


def _make_nested() -> object:
    def nested(prediction: str, gold: str) -> bool:
        return True

    return nested


nested_reward = _make_nested()
not_callable = 42


# --- GSM8K gold --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "gold"),
    [
        ("She pays 2*36 = <<2*36=72>>72 dollars.\n#### 72", "72"),
        ("... \n#### 1,450,000", "1450000"),
        ("#### 2,125 ", "2125"),
        ("He loses 10.\n#### -10", "-10"),
        ("#### 0.5", "0.5"),
        ("#### -1,234.75", "-1234.75"),
    ],
)
def test_gsm8k_gold_takes_the_text_after_the_marker(answer: str, gold: str) -> None:
    assert gsm8k_gold(answer) == gold


@pytest.mark.parametrize("answer", ["The answer is 72", "#### ", ""])
def test_gsm8k_gold_without_a_final_answer_is_a_clear_error(answer: str) -> None:
    with pytest.raises(ValueError, match="no final answer after '####'"):
        gsm8k_gold(answer)


def test_gsm8k_gold_reads_every_test_answer() -> None:
    lines = gsm8k_path().read_text().splitlines()
    golds = [gsm8k_gold(json.loads(line)["answer"]) for line in lines]
    assert len(golds) == 1319
    assert all(float(gold) == float(gold) for gold in golds)  # every one is a plain number


# --- what math-verify decides (in-process: score_math is a pure function) -----------------------


@pytest.mark.parametrize(
    ("prediction", "gold", "correct", "parsed"),
    [
        ("The answer is 72.", "72", True, "72"),
        ("\\boxed{72}", "72", True, "72"),
        ("72.0", "72", True, "72"),
        ("$72.00", "72", True, "72"),
        ("16 - 3 - 4 = 9 eggs, 9 * 2 = 18\n#### 18", "18", True, "18"),
        ("1,234", "1234", True, "1234"),
        ("0.5", "1/2", True, "1/2"),
        ("1/2", "0.5", True, "1/2"),
        ("\\frac{1}{2}", "0.5", True, "1/2"),
        ("0.33", "1/3", False, "33/100"),
        ("\\boxed{71}", "72", False, "71"),
        ("The answer is 72.5", "72", False, "145/2"),
        ("10", "-10", False, "10"),
    ],
)
def test_math_verify_decisions(prediction: str, gold: str, correct: bool, parsed: str) -> None:
    result = score_math(prediction, gold)
    assert result == RewardResult(reward=float(correct), correct=correct, parsed=parsed)


@pytest.mark.parametrize("prediction", ["asdf qwerty", "no idea", "seventy-two", ""])
def test_an_answer_without_math_is_a_parse_failure(prediction: str) -> None:
    result = score_math(prediction, "72")
    assert (result.reward, result.correct, result.status) == (0.0, False, "parse_failed")
    assert result.detail == "no answer found in the prediction"


def test_a_gold_that_does_not_parse_says_so() -> None:
    result = score_math("72", "no number here")
    assert result.status == "parse_failed"
    assert "gold answer did not parse" in (result.detail or "")


# --- golds the reward can read: checked before a run, as the scorer reads them -----------------


@pytest.mark.parametrize("gold", ["72", "-3", "0.5", "007", "1/2", "\\frac{1}{2}", "$5", "10%"])
def test_the_math_reward_reads_numbers_and_expressions_as_golds(gold: str) -> None:
    assert math_gold_problem(gold) is None
    assert score_math(gold, gold).correct  # the scorer reads it the same way


@pytest.mark.parametrize("gold", ["???", "five", "Paris", "N/A", "x"])
def test_a_gold_the_math_reward_cannot_read_is_named_as_such(gold: str) -> None:
    assert "math-verify finds no number or expression in it" in (math_gold_problem(gold) or "")
    assert score_math(gold, gold).status == "parse_failed"  # every answer would score 0


def test_only_the_math_reward_has_a_known_reading_of_golds() -> None:
    assert gold_check(load_reward(None)) is math_gold_problem
    assert gold_check(load_reward("tests.test_rewards:slow_reward")) is None


def write_rows(path: Path, *rows: dict[str, object]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.mark.parametrize(
    ("name", "row", "refusal"),
    [
        (
            "jsonl",
            {"question": "q", "answer": "#### ???"},
            "line 2: the reward cannot read the gold answer '???' of field 'answer': math-verify",
        ),
        (
            "jsonl",
            {"question": "q", "answer": "Paris"},
            "line 2: the reward cannot read the gold answer 'Paris' of field 'answer'",
        ),
        (
            "sessions",
            {"turns": [{"user": "q", "expected": "4"}, {"user": "r", "expected": "four"}]},
            "line 2: the reward cannot read the gold answer 'four' of field 'turns[1].expected'",
        ),
    ],
)
def test_a_row_whose_gold_the_reward_cannot_read_is_refused(
    tmp_path: Path, name: str, row: dict[str, object], refusal: str
) -> None:
    good = (
        {"question": "q", "answer": "1"}
        if name == "jsonl"
        else {"turns": [{"user": "q", "expected": "1"}]}
    )
    path = write_rows(tmp_path / "rows.jsonl", good, row)
    with pytest.raises(DataError, match=None) as refused:
        list(with_readable_golds(load_dataset(name, data_file=path), math_gold_problem))
    assert str(refused.value).startswith(f"{path} {refusal}")
    # A reward of your own reads golds its own way: the same rows are played for it.
    assert len(list(with_readable_golds(load_dataset(name, data_file=path), None))) == 2


def test_a_marker_with_nothing_after_it_is_refused_whatever_the_reward(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "rows.jsonl", {"question": "q", "answer": "2 apples\n#### "})
    for check in (math_gold_problem, None):
        with pytest.raises(DataError) as refused:
            list(with_readable_golds(load_dataset(str(path)), check))
        assert str(refused.value).startswith(
            f"{path} line 1: field 'answer': GSM8K answer has no final answer after '####'"
        )
        assert str(refused.value).endswith("; end it with '#### <final answer>'")


def test_the_shipped_sets_have_golds_the_math_reward_reads() -> None:
    for name in ("gsm8k_mini", "word_problems", "sessions_mini"):
        items = list(with_readable_golds(load_dataset(name), math_gold_problem))
        assert len(items) >= 12, name


# --- load_reward ------------------------------------------------------------------------------


def test_load_reward_defaults_to_math() -> None:
    assert load_reward(None) is score_math
    assert load_reward("math") is score_math
    assert load_reward("tests.test_rewards:slow_reward") is slow_reward


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nonsense", "expected 'math', 'bfcl', 'agentdojo' or 'package.module:function'"),
        (
            "tests.test_rewards:",
            "expected 'math', 'bfcl', 'agentdojo' or 'package.module:function'",
        ),
        ("no_such_pkg.rewards:fn", "module 'no_such_pkg.rewards' not found"),
        ("tests.test_rewards:missing", "has no attribute 'missing'"),
        ("tests.test_rewards:not_callable", "'not_callable' is a int, not a function"),
        ("tests.test_rewards:nested_reward", "define it as a module-level function"),
    ],
)
def test_load_reward_errors_name_the_spec_and_the_cause(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        load_reward(spec)
    assert repr(spec) in str(caught.value)


# --- the scorer's process pool ----------------------------------------------------------------


def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


async def test_scorer_scores_in_workers_and_leaves_no_process() -> None:
    async with RewardScorer(max_workers=2) as scorer:
        pids = scorer.worker_pids()
        results = await asyncio.gather(
            scorer.score("The answer is 72.", "72"),
            scorer.score("\\boxed{71}", "72"),
            scorer.score("gibberish", "72"),
        )
    assert [r.status for r in results] == ["ok", "ok", "parse_failed"]
    assert [r.correct for r in results] == [True, False, False]
    assert scorer.counts == {"ok": 2, "parse_failed": 1}
    assert len(pids) == 2
    assert not any(_alive(pid) for pid in pids)
    with pytest.raises(RewardPoolError, match="closed"):
        await scorer.score("72", "72")


async def test_a_timeout_scores_zero_and_does_not_wedge_the_next_item() -> None:
    # One worker: had the stuck one not been killed, the next item would queue behind its sleep.
    scorer = RewardScorer("tests.test_rewards:slow_reward", timeout=0.5, max_workers=1)
    async with scorer:
        first_pids = scorer.worker_pids()
        stuck = await scorer.score("sleep", "sleep")
        assert (stuck.status, stuck.reward, stuck.correct) == ("timeout", 0.0, False)
        after = await scorer.score("42", "42")
        # Answered while the stuck item still slept: its process was killed, not waited for.
        await eventually(lambda: not any(_alive(pid) for pid in first_pids))
        assert (after.status, after.correct) == ("ok", True)
        assert set(scorer.worker_pids()).isdisjoint(first_pids)
    assert scorer.counts == {"timeout": 1, "ok": 1}
    assert not any(_alive(pid) for pid in first_pids)


async def test_items_caught_in_a_pool_restart_are_retried(tmp_path: Path) -> None:
    blocker, victim = tmp_path / "blocker", tmp_path / "victim"
    async with RewardScorer("tests.test_rewards:marker_reward", timeout=2.0, max_workers=2) as s:
        stuck = asyncio.ensure_future(s.score(f"block:{blocker}", ""))
        await _wait_for(blocker)
        # Not a wait for an event: one timeout serves every item, so only a later start puts
        # the victim's deadline after the blocker's, with room for the restart to reach it.
        await asyncio.sleep(0.3)
        caught = asyncio.ensure_future(s.score(f"once:{victim}", ""))
        await _wait_for(victim)
        assert (await stuck).status == "timeout"
        # The restart killed the victim's first run; its retry found the marker and finished.
        assert await caught == RewardResult(reward=1.0, correct=True)


async def _wait_for(path: Path) -> None:
    """Wait until a reward process has created `path` (a spawned pool may be slow to start)."""
    await eventually(lambda: asyncio.to_thread(path.exists), 30.0, lambda: f"{path} never appeared")


async def test_custom_reward_values_are_normalised() -> None:
    async with RewardScorer("tests.test_rewards:mixed_reward", max_workers=1) as scorer:
        predictions = ["true", "false", "float", "one", "str", "raise"]
        results = {p: await scorer.score(p, "") for p in predictions}
    assert results["true"] == RewardResult(reward=1.0, correct=True)
    assert results["false"] == RewardResult(reward=0.0, correct=False)
    assert results["float"] == RewardResult(reward=0.25, correct=False)
    assert results["one"] == RewardResult(reward=1.0, correct=True)
    assert results["str"].status == "error"
    assert "expected a RewardResult" in (results["str"].detail or "")
    assert results["raise"] == RewardResult.failed("error", "ValueError: broken reward")


async def test_a_reward_that_kills_its_worker_scores_an_error_and_the_pool_recovers() -> None:
    async with RewardScorer("tests.test_rewards:mixed_reward", max_workers=1) as scorer:
        crashed = await scorer.score("exit", "")
        after = await scorer.score("true", "")
    assert crashed == RewardResult.failed("error", "a worker process died twice scoring this item")
    assert after.correct


def test_a_reward_given_as_a_function_must_reach_the_workers() -> None:
    with pytest.raises(ConfigError, match="module-level function"):
        RewardScorer(nested_reward)  # type: ignore[arg-type]


async def test_200_concurrent_items_keep_the_event_loop_responsive() -> None:
    # Responsiveness, not speed: scoring must never stall the loop that drives the agents.
    golds = [str(n) for n in range(1000, 1200)]
    predictions = [
        f"The answer is {g}." if i % 2 == 0 else f"{int(g) + 1}" for i, g in enumerate(golds)
    ]
    scored: list[RewardResult] = []
    seen: set[int] = set()  # how many items were scored, each time the loop came round

    async def score(prediction: str, gold: str) -> RewardResult:
        result = await scorer.score(prediction, gold)
        scored.append(result)
        return result

    async def ticker() -> None:
        while True:
            seen.add(len(scored))
            await asyncio.sleep(0)  # one turn of the loop

    async with RewardScorer() as scorer:
        ticking = asyncio.ensure_future(ticker())
        results = await asyncio.gather(*map(score, predictions, golds))
        ticking.cancel()
    assert [r.correct for r in results] == [i % 2 == 0 for i in range(200)]
    assert all(r.status == "ok" for r in results)
    # The loop kept turning while the items were scored: it saw them finish bit by bit, not
    # all at once after a stall.
    assert len(seen - {0, 200}) >= 10, sorted(seen)
