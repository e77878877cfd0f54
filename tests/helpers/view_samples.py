"""Attempts at the shipped word problems and at the session 'eggs', as the sample page shows
them."""

from __future__ import annotations

from typing import Any

from tests.helpers.view_runs import record

CRATES = "A crate holds 16 bottles. How many bottles are in 3 crates?"
"""word_problems-1, the first problem of the shipped set; its gold answer is 48."""


EGGS = [
    ("A carton holds 12 eggs. How many eggs are in 7 cartons?", "84"),
    ("Now double it.", "168"),
    ("Are you sure? Check again.", None),
    ("If 20 of those eggs break, how many are left?", "148"),
]
"""The turns of session 'eggs' of the shipped sessions_mini, and what each expects."""


def answered(sample: str, attempt: int, answer: str | None, correct: bool) -> dict[str, Any]:
    """A single-turn attempt at `sample` that answered `answer`."""
    line = record(sample, attempt, correct)
    line["answer"] = answer
    line["trajectory"]["messages"][0]["content"] = CRATES
    return line


def session_record(sample: str, attempt: int, answers: list[str | None]) -> dict[str, Any]:
    """An attempt at session 'eggs' as multi_turn_chat writes it: the whole conversation in
    Responses-API items (a multiply call in turn 1), one output and one reward per turn."""
    messages: list[dict[str, Any]] = []
    for turn, ((user, _), answer) in enumerate(zip(EGGS, answers, strict=True)):
        messages.append({"role": "user", "content": user})
        if turn == 1:
            messages += [
                {
                    "arguments": '{"a": 84, "b": 2}',
                    "call_id": "call_1",
                    "name": "multiply",
                    "type": "function_call",
                    "id": "__fake_id__",
                },
                {"call_id": "call_1", "output": "168.0", "type": "function_call_output"},
            ]
        messages.append(
            {
                "id": "__fake_id__",
                "content": [
                    {"annotations": [], "text": f"Answer: {answer}", "type": "output_text"}
                ],
                "role": "assistant",
                "status": "completed",
                "type": "message",
            }
        )
    expected = ["84", "168", "168", "148"]
    rewards = [float(a == e) for a, e in zip(answers, expected, strict=True)]
    outputs = [f"Answer: {answer}" for answer in answers]
    line = record(sample, attempt, all(rewards))
    line.update(
        reward=sum(rewards) / len(rewards),
        answer=answers[-1],
        turn_rewards=rewards,
        turn_answers=answers,
        challenge_turns=[2],
        model_calls=5,
        tool_calls=1,
    )
    line["trajectory"].update(
        messages=messages,
        final_output=outputs[-1],
        turn_outputs=outputs,
        tool_calls=[{"name": "multiply", "arguments": '{"a": 84, "b": 2}', "result": "168.0"}],
        retries=[],
    )
    return line


DOWN = {"kind": "upstream_error", "class": "infra", "message": "502 after retries"}


def stopped_session(attempt: int, schema: int) -> dict[str, Any]:
    """An attempt at 'eggs' a worker outage stopped at turn 3: unscored, as schema 2 writes it
    (no score) or as schema 1 did (the unreached turns scored 0, the attempt wrong)."""
    line = session_record("eggs", attempt, ["84", "168", "168", None])
    line.update(schema=schema, error=DOWN)
    line["trajectory"]["error"] = DOWN
    if schema >= 2:
        line.update(reward=None, correct=None, turn_rewards=None)
    return line
