"""`agent-eval export RUN --format sft|rl`, and ATIF with token ids: attempts recorded with their
calls' token ids, exported and read back against what the calls were given and produced."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from agent_eval.agents.trajectory import CallTokens, TrajectoryError
from agent_eval.cli import app
from agent_eval.results.exports.atif_models import Trajectory
from agent_eval.results.exports.rl import NO_TOKENS, PARTLY, SPLIT
from agent_eval.results.exports.sft import NO_ANSWER, sft_line
from agent_eval.results.record import AttemptRecord
from tests.helpers.program_records import THOUGHT, program_record
from tests.helpers.token_calls import sampled_call
from tests.helpers.token_records import (
    ARGUMENTS,
    MULTIPLY,
    SYSTEM,
    calculator_attempt,
    continuing,
    logprobs,
    session_attempt,
    write_run,
)
from tests.helpers.view_runs import record

PROMPT = list(range(100, 130))
ANSWERS = [[7, 8, 9, 10], [42, 43, 2]]
TOOL_OUTPUT = [500, 501, 502]


def export(*args: str) -> Any:
    return CliRunner().invoke(app, ["export", *args], env={"COLUMNS": "400"})


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def calls() -> list[CallTokens]:
    return continuing(PROMPT, ANSWERS, TOOL_OUTPUT)


def test_sft_lines_are_the_chat_messages_and_tools_of_the_scored_attempts(tmp_path: Path) -> None:
    timed_out = TrajectoryError("timeout", "no answer in time")
    silent = calculator_attempt("q4", 0, [], correct=False, error=TrajectoryError("max_turns", ""))
    silent.trajectory["messages"] = [{"role": "user", "content": "6*7?"}]
    run = write_run(tmp_path / "run", [
        calculator_attempt("q1", 0, calls()),
        calculator_attempt("q2", 0, [None, None], correct=False),
        calculator_attempt("q3", 0, calls(), error=timed_out),
        silent,
    ])  # fmt: skip
    result = export(str(run), "--format", "sft")
    assert result.exit_code == 0, result.output
    assert f"Wrote 2 sft lines to {run / 'sft.jsonl'}" in result.output
    assert "1 attempt unscored" in result.output and f"1 attempt {NO_ANSWER}" in result.output
    first, second = lines(run / "sft.jsonl")
    assert first == second
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "multiply", "arguments": ARGUMENTS},
    }
    assert first["messages"] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "6*7?"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": "42.0", "tool_call_id": "c1"},
        {"role": "assistant", "content": "42"},
    ]
    function = {"name": "multiply", "description": MULTIPLY.description,
                "parameters": MULTIPLY.parameters}  # fmt: skip
    assert first["tools"] == [{"type": "function", "function": function}]
    assert not list(run.glob("*.partial"))


def test_sft_reads_anthropic_and_responses_attempts_as_chat_messages() -> None:
    """The command runner's Anthropic blocks (thinking, tool_use, tool_result) and the Agents
    SDK's Responses items (function_call, its output, output_text) give one conversation."""
    call = {"type": "function", "function": {"name": "multiply", "arguments": '{"a": 16, "b": 3}'}}
    question = {"role": "user", "content": "A crate holds 16 bottles. How many in 3 crates?"}
    answer = {"role": "assistant", "content": "48"}
    anthropic, responses = (
        AttemptRecord.from_line(json.dumps(line).encode(), "an attempt")
        for line in (program_record("q1", 0), record("s1", 0, correct=True))
    )
    (line,) = sft_line(anthropic, "command", None).lines
    assert line == {"messages": [
        question,
        {"role": "assistant", "content": "Let me multiply.", "reasoning_content": THOUGHT,
         "tool_calls": [{"id": "tu_1", **call}]},
        {"role": "tool", "content": "48.0", "tool_call_id": "tu_1"},
        answer,
    ]}  # fmt: skip
    (line,) = sft_line(responses, "math_calculator", None).lines
    assert line["messages"] == [
        question,
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", **call}]},
        {"role": "tool", "content": "48.0", "tool_call_id": "c1"},
        answer,
    ]


def test_sft_takes_the_attempts_the_filters_choose(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [
        calculator_attempt("right", 0, []),
        calculator_attempt("wrong", 0, [], correct=False),
    ])  # fmt: skip
    chosen = export(str(run), "-f", "sft", "--correct-only", "-o", str(tmp_path))
    assert chosen.exit_code == 0, chosen.output
    assert "1 attempt not correct (--correct-only)" in chosen.output
    assert len(lines(tmp_path / "sft.jsonl")) == 1
    high = export(str(run), "-f", "sft", "--min-reward", "2", "-o", str(tmp_path / "high.jsonl"))
    assert high.exit_code == 2
    assert "no attempt of" in high.output and "2 attempts with a reward below 2" in high.output
    assert not (tmp_path / "high.jsonl").exists() and not list(tmp_path.glob("*.partial"))
    atif = export(str(run), "--correct-only")
    assert atif.exit_code == 2 and "atif exports every attempt" in atif.output


def test_an_rl_line_is_the_calls_concatenated_with_the_model_s_tokens_masked_in(
    tmp_path: Path,
) -> None:
    tokens = calls()
    run = write_run(tmp_path / "run", [calculator_attempt("q1", 0, tokens)])
    result = export(str(run), "--format", "rl")
    assert result.exit_code == 0, result.output
    (line,) = lines(run / "rl.jsonl")
    last = tokens[-1]
    # The rollout is exactly what the last call was given and produced, split where the first
    # prompt ends; the mask marks the two completions, and nothing of the tool's output.
    assert line["prompt_ids"] == PROMPT
    assert line["prompt_ids"] + line["response_ids"] == last.prompt_ids + last.completion_ids
    given = [token + 1 for token in TOOL_OUTPUT]
    assert line["response_ids"] == ANSWERS[0] + given + ANSWERS[1]
    assert line["response_mask"] == [1] * 4 + [0] * 3 + [1] * 3
    assert line["response_logprobs"] == logprobs(ANSWERS[0]) + [0.0] * 3 + logprobs(ANSWERS[1])
    assert line["calls"] == [
        {"index": 0, "start": 0, "end": 4, "turn": None, "turn_reward": None},
        {"index": 1, "start": 7, "end": 10, "turn": None, "turn_reward": None},
    ]
    for call, recorded in zip(line["calls"], tokens, strict=True):  # each call, cut back out
        assert line["prompt_ids"] + line["response_ids"][: call["start"]] == recorded.prompt_ids
        assert line["response_ids"][call["start"] : call["end"]] == recorded.completion_ids
    assert (line["sample_id"], line["attempt"], line["session_id"], line["segment"]) == (
        "q1", 0, "q1-0", 0,
    )  # fmt: skip
    assert (line["reward_score"], line["correct"], line["turn_rewards"]) == (1.0, True, None)


def test_a_call_of_several_choices_is_exported_with_the_one_the_next_call_goes_on_from(
    tmp_path: Path,
) -> None:
    first, second = calls()
    took_second = sampled_call(first, took=1)
    run = write_run(tmp_path / "run", [calculator_attempt("q1", 0, [took_second, second])])
    result = export(str(run), "-f", "rl")
    assert result.exit_code == 0, result.output
    assert SPLIT not in result.output
    (line,) = lines(run / "rl.jsonl")
    assert line["prompt_ids"] + line["response_ids"] == second.prompt_ids + second.completion_ids
    assert line["response_logprobs"][:4] == logprobs(ANSWERS[0])
    # The last call's own choices are not gone on from: its first is the one exported.
    last = sampled_call(second, took=0)
    assert export(str(write_run(tmp_path / "last", [
        calculator_attempt("q1", 0, [took_second, last])
    ])), "-f", "rl").exit_code == 0  # fmt: skip
    (again,) = lines(tmp_path / "last" / "rl.jsonl")
    assert again["response_ids"] == line["response_ids"]


def test_a_call_that_does_not_continue_the_one_before_starts_a_line_of_its_own(
    tmp_path: Path,
) -> None:
    first, second = calls()
    rendered_anew = list(second.prompt_ids)
    rendered_anew[len(PROMPT) + 1] += 1  # the template wrote the first answer differently
    drifted = CallTokens(rendered_anew, second.completion_ids, None)
    run = write_run(tmp_path / "run", [calculator_attempt("q1", 0, [first, drifted])])
    result = export(str(run), "--format", "rl")
    assert result.exit_code == 0, result.output
    assert f"1 attempt {SPLIT}" in result.output
    one, two = lines(run / "rl.jsonl")
    assert [one["segment"], two["segment"]] == [0, 1]
    assert (one["prompt_ids"], one["response_ids"]) == (first.prompt_ids, first.completion_ids)
    assert (two["prompt_ids"], two["response_ids"]) == (rendered_anew, second.completion_ids)
    assert two["response_mask"] == [1] * len(second.completion_ids)
    assert two["response_logprobs"] is None  # the worker gave none for that call
    assert two["calls"] == [{"index": 1, "start": 0, "end": 3, "turn": None, "turn_reward": None}]


def test_each_call_of_a_session_names_its_turn_and_that_turn_s_reward(tmp_path: Path) -> None:
    tokens = continuing(PROMPT, ANSWERS, TOOL_OUTPUT)
    run = write_run(tmp_path / "run", [session_attempt("s1", tokens)])
    assert export(str(run), "-f", "rl").exit_code == 0
    (line,) = lines(run / "rl.jsonl")
    assert [(c["turn"], c["turn_reward"]) for c in line["calls"]] == [(0, 1.0), (1, 0.0)]
    assert (line["reward_score"], line["turn_rewards"]) == (0.5, [1.0, 0.0])


def test_attempts_without_token_ids_are_counted_and_never_an_empty_file(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [calculator_attempt("q1", 0, [None, None])])
    result = export(str(run), "-f", "rl")
    assert result.exit_code == 2
    assert f"1 attempt {NO_TOKENS}" in " ".join(result.output.split())
    assert not (run / "rl.jsonl").exists() and not list(run.glob("*.partial"))


def test_a_call_without_token_ids_ends_a_line_and_the_next_starts_anew(tmp_path: Path) -> None:
    """A call that failed has no tokens; the call after it is given what it said."""
    first, second, third = continuing(PROMPT, [*ANSWERS, [60, 61]], TOOL_OUTPUT)
    run = write_run(tmp_path / "run", [
        calculator_attempt("q1", 0, [first, None, third]),
        calculator_attempt("q2", 0, [None, None]),
    ])  # fmt: skip
    result = export(str(run), "-f", "rl")
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert f"1 attempt {PARTLY}" in said and f"1 attempt {NO_TOKENS}" in said
    assert "Wrote 2 rl lines" in said and SPLIT not in said
    one, two = lines(run / "rl.jsonl")
    assert (one["prompt_ids"], one["response_ids"]) == (first.prompt_ids, first.completion_ids)
    assert (two["prompt_ids"], two["response_ids"]) == (third.prompt_ids, third.completion_ids)
    assert [c["index"] for c in one["calls"]] + [c["index"] for c in two["calls"]] == [0, 2]
    said_by_second = third.prompt_ids[len(second.prompt_ids) :][: len(second.completion_ids)]
    assert said_by_second == second.completion_ids  # in the next line's prompt


def test_atif_steps_carry_their_call_s_token_ids_and_log_probabilities(tmp_path: Path) -> None:
    tokens = calls()
    run = write_run(tmp_path / "run", [calculator_attempt("q1", 0, tokens)])
    assert export(str(run)).exit_code == 0
    document = json.loads((run / "atif" / "q1.0.json").read_text())
    Trajectory.model_validate(document)
    agents = [step["metrics"] for step in document["steps"] if step["source"] == "agent"]
    assert [(m["prompt_token_ids"], m["completion_token_ids"], m["logprobs"]) for m in agents] == [
        (t.prompt_ids, t.completion_ids, t.logprobs) for t in tokens
    ]
    assert all("tokens" not in m["extra"]["agent_eval"] for m in agents)
