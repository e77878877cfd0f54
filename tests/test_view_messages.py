"""The one message shape (results/messages.py) the sample page draws and the ATIF export writes,
from each shape runners and the proxy record messages in."""

from __future__ import annotations

from typing import Any

from agents import ItemHelpers

from agent_eval.agents.recording import as_message
from agent_eval.results.messages import Message, ToolCall, messages
from agent_eval.view.messages import drawable

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
    assert messages(recorded) == SHAPED


def test_responses_items_as_the_agents_sdk_records_them() -> None:
    answer = [{"type": "output_text", "text": "48", "annotations": []}]
    recorded = [
        {"role": "user", "content": "16 * 3?"},
        {"type": "function_call", "call_id": "c1", "name": "multiply",
         "arguments": '{"a": 16, "b": 3}', "id": "__fake_id__"},
        {"type": "function_call_output", "call_id": "c1", "output": "48.0"},
        {"type": "message", "role": "assistant", "content": answer, "status": "completed"},
    ]  # fmt: skip
    assert messages(recorded) == [*SHAPED[:3], Message("assistant", answer)]


def test_items_dumped_without_their_default_type() -> None:
    recorded = [
        {"role": "user", "content": "16 * 3?"},
        {"name": "multiply", "arguments": '{"a": 16, "b": 3}', "call_id": "c1"},
        {"call_id": "c1", "output": "48.0", "type": "function_call_output"},
        {"role": "assistant", "content": "48"},
    ]
    assert messages(recorded) == SHAPED


def test_the_sdk_s_own_input_items_take_the_shape() -> None:
    given: list[Any] = [{"role": "user", "content": "16 * 3?"}]
    items = ItemHelpers.input_to_new_input_list(given)
    assert messages(as_message(item) for item in items) == SHAPED[:1]


def test_an_item_of_another_kind_is_named_by_its_type() -> None:
    reasoning = {"type": "reasoning", "summary": [], "content": "think"}
    assert messages([reasoning, "a bare string"]) == [
        Message("reasoning", "think"),
        Message("message", "a bare string"),
    ]


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
        {"role": "tool", "content": "48.0", "tool_calls": [], "call_id": "c1", "reasoning": None}
    ]
    assert record["trajectory"]["messages"][0]["tool_call_id"] == "c1"  # the record is untouched
    empty = {"messages": [], "program": None, "model_calls": []}
    assert drawable({"sample_id": "q2"})["trajectory"] == empty


def test_a_program_comes_in_the_page_s_shape_whatever_its_record_holds() -> None:
    ran = {"command": "python a.py", "exit_code": 0, "duration_s": 1, "diff": "@@ -1 +1 @@\n-a\n+b"}
    program = drawable({"trajectory": {"program": ran}})["trajectory"]["program"]
    assert program["ending"] == "exit 0" and program["duration_s"] == 1.0
    assert program["diff_lines"] == [("hunk", "@@ -1 +1 @@"), ("del", "-a"), ("add", "+b")]
    assert (program["stderr_tail"], program["check"], program["signal"]) == ("", None, None)
    odd = {"exit_code": "1", "signal": "SIGKILL", "check": "passed", "duration_s": True}
    program = drawable({"trajectory": {"program": odd}})["trajectory"]["program"]
    assert program["ending"] == "killed by SIGKILL"
    assert (program["exit_code"], program["check"], program["duration_s"]) == (None, None, None)
    assert drawable({"trajectory": {"program": "not a dict"}})["trajectory"]["program"] is None


def test_anthropic_messages_as_the_proxy_records_them() -> None:
    question = {"role": "user", "content": [{"type": "text", "text": "16 * 3?"}]}
    use = {"type": "tool_use", "id": "c1", "name": "multiply", "input": {"a": 16, "b": 3}}
    thought = {"type": "thinking", "thinking": "multiply them", "signature": "s"}
    called = {"role": "assistant", "content": [thought, use]}
    result = {"type": "tool_result", "tool_use_id": "c1", "content": "48.0"}
    answer = {"type": "message", "role": "assistant", "id": "msg_1", "stop_reason": "end_turn",
              "content": [{"type": "text", "text": "48"}]}  # fmt: skip
    shaped = messages([question, called, {"role": "user", "content": [result]}, answer])
    assert shaped == [
        Message("user", question["content"]),
        Message("assistant", tool_calls=[ToolCall("c1", "multiply", {"a": 16, "b": 3})],
                reasoning="multiply them"),
        Message("tool", "48.0", call_id="c1"),
        Message("assistant", answer["content"]),
    ]  # fmt: skip


def test_an_anthropic_message_with_two_results_and_text_gives_each_apart() -> None:
    results = [
        {"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text", "text": "1"}]},
        {"type": "tool_result", "tool_use_id": "b", "content": "2", "is_error": True},
        {"type": "text", "text": "go on"},
    ]
    assert messages([{"role": "user", "content": results}]) == [
        Message("tool", [{"type": "text", "text": "1"}], call_id="a"),
        Message("tool", "2", call_id="b"),
        Message("user", [{"type": "text", "text": "go on"}]),
    ]


def test_chat_reasoning_content_is_kept_apart() -> None:
    said = {"role": "assistant", "content": "48", "reasoning_content": "16 * 3 is 48"}
    assert messages([said]) == [Message("assistant", "48", reasoning="16 * 3 is 48")]
