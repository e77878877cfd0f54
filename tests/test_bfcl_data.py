"""bfcl:PART datasets and what the bfcl runner sends: parts by BFCL's names, entries as
samples, BFCL's tools and prompts, and clear errors for parts it cannot read."""

from __future__ import annotations

import json

import pytest

from agent_eval.benchmarks.bfcl.datasets import bfcl_items
from agent_eval.benchmarks.bfcl.prompts import openai_tools, prompt_messages
from agent_eval.benchmarks.bfcl.reward import score_bfcl
from agent_eval.data.errors import DataError
from agent_eval.data.loaders import load_dataset
from tests.helpers.bfcl_multi_turn import script


def test_an_unknown_part_names_the_parts_bfcl_has() -> None:
    with pytest.raises(DataError, match="bfcl has no part 'simpel'; it has: simple, simple_python"):
        load_dataset("bfcl:simpel")


def test_a_multi_turn_part_is_read_by_the_multi_turn_part() -> None:
    sample = next(bfcl_items("multi_turn_miss_func"))
    assert sample.id == "multi_turn_miss_func_0"
    assert sample.metadata["bfcl_category"] == "multi_turn_miss_func"


def test_an_entry_becomes_a_sample_with_its_messages_functions_and_gold() -> None:
    sample = next(bfcl_items("live_simple"))
    assert sample.id == "live_simple_0-0-0" and sample.messages
    assert sample.question == sample.messages[-1]["content"]
    assert sample.metadata["bfcl_category"] == "live_simple"
    assert sample.answer is not None
    gold = json.loads(sample.answer)
    assert gold["bfcl_category"] == "live_simple"
    assert gold["functions"] == sample.metadata["functions"]
    assert gold["ground_truth"] == [{"get_user_info": {"user_id": [7890], "special": ["black"]}}]
    assert json.loads(next(bfcl_items("irrelevance")).answer or "")["ground_truth"] is None


def test_tools_are_converted_as_bfcls_openai_handler_does_with_its_language_hints() -> None:
    sample = next(bfcl_items("simple_java"))
    functions = sample.metadata["functions"]
    (tool,) = openai_tools(functions, "simple_java")
    assert tool["type"] == "function"
    assert tool["function"]["name"] == functions[0]["name"].replace(".", "_")
    assert tool["function"]["description"].endswith("in Java 8 SDK syntax.")
    assert {p["type"] for p in tool["function"]["parameters"]["properties"].values()} == {"string"}
    assert "Java 8" not in functions[0]["description"]  # the sample's own docs stay as they are


def test_prompt_mode_puts_bfcls_system_prompt_first_and_keeps_the_question() -> None:
    sample = next(bfcl_items("simple"))
    assert sample.messages is not None
    messages = prompt_messages(sample.messages, sample.metadata["functions"], "simple_python")
    assert messages[0]["role"] == "system"
    assert sample.metadata["functions"][0]["name"] in messages[0]["content"]
    assert messages[1:] == sample.messages


def test_a_multi_turn_gold_is_scored_by_bfcls_multi_turn_checker() -> None:
    sample = next(bfcl_items("multi_turn_base"))
    assert sample.answer is not None
    gold = json.loads(sample.answer)
    right = {"mode": "fc", "result": script(gold, "right").result}
    wrong = {"mode": "fc", "result": script(gold, "wrong_argument").result}
    assert score_bfcl(json.dumps(right), sample.answer).correct
    verdict = score_bfcl(json.dumps(wrong), sample.answer)
    assert not verdict.correct and verdict.detail
