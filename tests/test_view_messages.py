"""The sample page's one message shape, from each shape runners record their messages in."""

from __future__ import annotations

from typing import Any

from agents import ItemHelpers

from agent_eval.agents.recording import as_message
from agent_eval.view.messages import Message, ToolCall, drawable, message

CALL = ToolCall("c1", "multiply", '{"a": 16, "b": 3}')
SHAPED = [
    Message("user", "16 * 3?"),
    Message("assistant", tool_calls=[CALL]),
    Message("tool", "48.0", call_id="c1"),
    Message("assistant", "48"),
]
"""The page's shape of one conversation: a question, a call, its output, the answer."""


def test_chat_completions_messages() -> None:
    function = {"name": "multiply", "arguments": '{"a": 16, "b": 3}'}
    call = {"id": "c1", "type": "function", "function": function}
    recorded = [
        {"role": "user", "content": "16 * 3?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "48.0"},
        {"role": "assistant", "content": "48"},
    ]
    assert [message(item) for item in recorded] == SHAPED


def test_responses_items_as_the_agents_sdk_records_them() -> None:
    answer = [{"type": "output_text", "text": "48", "annotations": []}]
    recorded = [
        {"role": "user", "content": "16 * 3?"},
        {"type": "function_call", "call_id": "c1", "name": "multiply",
         "arguments": '{"a": 16, "b": 3}', "id": "__fake_id__"},
        {"type": "function_call_output", "call_id": "c1", "output": "48.0"},
        {"type": "message", "role": "assistant", "content": answer, "status": "completed"},
    ]  # fmt: skip
    assert [message(item) for item in recorded] == [*SHAPED[:3], Message("assistant", answer)]


def test_items_dumped_without_their_default_type() -> None:
    recorded = [
        {"role": "user", "content": "16 * 3?"},
        {"name": "multiply", "arguments": '{"a": 16, "b": 3}', "call_id": "c1"},
        {"call_id": "c1", "output": "48.0", "type": "function_call_output"},
        {"role": "assistant", "content": "48"},
    ]
    assert [message(item) for item in recorded] == SHAPED


def test_the_sdk_s_own_input_items_take_the_shape() -> None:
    given: list[Any] = [{"role": "user", "content": "16 * 3?"}]
    items = ItemHelpers.input_to_new_input_list(given)
    assert [message(as_message(item)) for item in items] == SHAPED[:1]


def test_an_item_of_another_kind_is_named_by_its_type() -> None:
    reasoning = {"type": "reasoning", "summary": [], "content": "think"}
    assert message(reasoning) == Message("reasoning", "think")
    assert message("a bare string") == Message("message", "a bare string")


def test_a_record_keeps_everything_but_its_messages_shape() -> None:
    record = {
        "sample_id": "q1",
        "trajectory": {
            "final_output": "48",
            "messages": [{"role": "tool", "tool_call_id": "c1", "content": "48.0"}],
        },
    }
    shaped = drawable(record)
    assert shaped["sample_id"] == "q1" and shaped["trajectory"]["final_output"] == "48"
    assert shaped["trajectory"]["messages"] == [
        {"role": "tool", "content": "48.0", "tool_calls": [], "call_id": "c1"}
    ]
    assert record["trajectory"]["messages"][0]["tool_call_id"] == "c1"  # the record is untouched
    assert drawable({"sample_id": "q2"})["trajectory"] == {"messages": []}
