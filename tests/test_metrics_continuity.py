"""Continuity: each model call's prompt ids checked against the prompt + completion ids of the
earlier call of its conversation, the first differing token found, and the run's drift rate."""

from __future__ import annotations

import random

from agent_eval.agents.trajectory import CallTokens
from agent_eval.metrics import (
    ContinuityCounts,
    DriftPoint,
    Summary,
    TurnCheck,
    continuity,
    recorded_tokens,
    summarize,
    wilson_interval,
)
from agent_eval.metrics.continuity import shared_prefix
from agent_eval.report.table import summary_sections
from tests.helpers.records import attempt
from tests.helpers.token_calls import (
    RENDERED_ANEW,
    conversation,
    drift_index,
    line_with_tokens,
    record_with_tokens,
    sampled_call,
)


def test_a_conversation_whose_turns_continue_each_other_has_no_drift() -> None:
    found = continuity(conversation(4))
    assert found.turns == tuple(TurnCheck(k, k - 1, None) for k in (1, 2, 3))
    assert (found.conversations, found.untokenized) == (1, 0)


def test_a_turn_rendered_anew_drifts_where_its_tokens_first_differ() -> None:
    calls = conversation(4, drift_at=2)
    expected = calls[1].completion_ids[-1]
    found = continuity(calls)
    point = DriftPoint(drift_index(calls, 2), expected=expected, found=RENDERED_ANEW)
    # The turn after the drift continues the prompt as it was sent: it is checked against that.
    assert found.turns == (TurnCheck(1, 0, None), TurnCheck(2, 1, point), TurnCheck(3, 2, None))
    assert calls[2].prompt_ids[point.index] == RENDERED_ANEW
    assert found.counts() == ContinuityCounts(tokenized=4, untokenized=0, checked=3, drifted=1)


def test_a_second_conversation_is_checked_against_its_own_turns() -> None:
    main, helper = conversation(3), conversation(2, first=300)
    calls = [main[0], helper[0], main[1], helper[1], main[2]]
    found = continuity(calls)
    # The helper's first call shares the template's header alone: a new conversation.
    assert found.turns == (TurnCheck(2, 0, None), TurnCheck(3, 1, None), TurnCheck(4, 2, None))
    assert found.conversations == 2


def test_calls_without_tokens_are_skipped_and_counted() -> None:
    first, second = conversation(2, drift_at=1)
    found = continuity([None, first, None, second])
    assert [(turn.call, turn.previous) for turn in found.turns] == [(3, 1)]
    assert found.turns[0].drift is not None
    assert found.counts() == ContinuityCounts(tokenized=2, untokenized=2, checked=1, drifted=1)


def test_a_turn_goes_on_from_the_choice_its_agent_took() -> None:
    first, second, third = conversation(3)
    for took in (0, 2):
        found = continuity([sampled_call(first, took), second, third])
        assert found.turns == (TurnCheck(1, 0, None), TurnCheck(2, 1, None))
        assert found.counts() == ContinuityCounts(tokenized=3, untokenized=0, checked=2)
    # A turn that goes on from none of the choices drifts from the closest.
    other = CallTokens(first.prompt_ids, [5, 5, 5], None)
    assert continuity([sampled_call(other, 0), second]).turns[0].drift is not None


def test_choices_read_back_from_a_line_and_an_older_line_reads_without() -> None:
    first, second = conversation(2)
    calls = [sampled_call(first, 1), second]
    line = line_with_tokens("q", 0, list(calls))
    assert [recorded_tokens(c) for c in line["trajectory"]["model_calls"]] == calls
    older = {"tokens": {"prompt_ids": [1], "completion_ids": [2], "logprobs": None}}
    assert recorded_tokens(older) == CallTokens([1], [2], None, None)


def test_a_conversation_sent_back_shorter_is_a_branch_not_drift() -> None:
    calls = conversation(3)
    again = CallTokens(calls[1].prompt_ids, [7, 7], None)  # turn 1 asked again after turn 2
    found = continuity([*calls, again])
    assert [turn.call for turn in found.turns] == [1, 2]
    assert found.conversations == 2


def test_shared_prefix_finds_the_first_difference_anywhere() -> None:
    rng = random.Random(0)
    for _ in range(300):
        a = [rng.randrange(3) for _ in range(rng.randrange(40))]
        # b is a's start, then anything: it may end first, or differ anywhere after.
        b = a[: rng.randrange(len(a) + 1)] + [rng.randrange(3) for _ in range(rng.randrange(9))]
        naive = next(
            (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
        )
        assert shared_prefix(a, b) == naive


def test_a_recorded_call_reads_its_tokens_and_rejects_anything_else() -> None:
    line = line_with_tokens("q", 0, [*conversation(1), None])
    first, second = line["trajectory"]["model_calls"]
    assert recorded_tokens(first) == conversation(1)[0]
    assert recorded_tokens(second) is None
    assert recorded_tokens({"tokens": {"prompt_ids": "1 2", "completion_ids": []}}) is None
    assert recorded_tokens({"tokens": [[1, 2], [3]]}) is None


def test_the_run_counts_turns_and_attempts_that_drift() -> None:
    records = [
        record_with_tokens("a", 0, list(conversation(3, drift_at=1))),  # 2 checked, 1 drifts
        record_with_tokens("a", 1, list(conversation(3))),  # 2 checked
        record_with_tokens("b", 0, [*conversation(2, drift_at=1), None]),  # 1 checked, 1 drifts
        record_with_tokens("c", 0, [None]),  # nothing to check
    ]
    summary = summarize([record.score() for record in records], 1.0)
    assert summary.drift_rate == wilson_interval(2, 5)
    assert summary.attempts_with_drift == wilson_interval(2, 3)
    assert summary.untokenized_calls == 2
    written = summary.to_dict()
    assert written["continuity"]["untokenized_calls"] == 2
    assert written["higher_is_better"]["continuity"]["drift_rate"] is False
    assert "drift_rate" in written["definitions"]["continuity"]
    assert Summary.read(written) == summary


def test_a_run_without_tokens_has_no_continuity_group() -> None:
    summary = summarize([attempt("q", 0, True, "4")], 1.0)
    assert summary.drift_rate is None
    assert "continuity" not in summary.to_dict()
    assert "Continuity" not in dict(summary_sections(summary))


def test_the_table_shows_the_drift_over_what_was_checked() -> None:
    records = [record_with_tokens("a", 0, [*conversation(3, drift_at=2), None])]
    rows = dict(dict(summary_sections(summarize([r.score() for r in records], 1.0)))["Continuity"])
    assert rows["drift rate"].endswith("over 2 turns checked")
    assert rows["drift rate"].startswith("0.500 ± ")
    assert rows["attempts with drift"].startswith("1.000 ± 0.000 [0.21, 1.00] over 1 attempts")
    assert rows["model calls without tokens"] == "1"
