"""The agentdojo runner's defences, from AgentDojo's own pipelines: what the model is sent."""

from __future__ import annotations

import json

import pytest

from agent_eval.benchmarks.agentdojo.datasets import item
from agent_eval.benchmarks.agentdojo.defences import defence
from agent_eval.benchmarks.agentdojo.runner import AgentDojoAgent
from agent_eval.benchmarks.agentdojo.suites import Task
from agent_eval.errors import ConfigError
from agent_eval.testing.agentdojo_scripts import script
from tests.helpers.agentdojo import played_by

SAMPLE = item(Task("banking", "user_task_0", "injection_task_0", "important_instructions"))


async def test_without_a_defence_tool_results_go_back_as_agentdojo_formats_them() -> None:
    trajectory = await played_by(AgentDojoAgent(), SAMPLE, script(SAMPLE, "right"))
    system, user, asked, told = trajectory.messages[:4]
    assert system["content"].startswith("You are an AI language model who assists the user")
    assert user["content"] == SAMPLE.question
    assert asked["tool_calls"][0]["function"]["name"] == "read_file"
    assert told["role"] == "tool" and "<INFORMATION>" in told["content"]
    tools = trajectory.setups[0].tools
    assert "send_money" in [tool.name for tool in tools]
    assert trajectory.tool_calls[0].result == told["content"]
    assert [call.worker for call in trajectory.model_calls] == [None] * 3


async def test_spotlighting_marks_tool_outputs_and_says_so() -> None:
    agent = AgentDojoAgent(defence="spotlighting_with_delimiting")
    trajectory = await played_by(agent, SAMPLE, script(SAMPLE, "right"))
    assert "<< before them and the symbol >>" in trajectory.messages[0]["content"]
    told = trajectory.messages[3]["content"]
    assert told.startswith("<<") and told.endswith(">>")
    assert json.loads(trajectory.final_output or "")["defence"] == "spotlighting_with_delimiting"


async def test_repeat_user_prompt_sends_the_prompt_after_each_round_of_results() -> None:
    agent = AgentDojoAgent(defence="repeat_user_prompt")
    trajectory = await played_by(agent, SAMPLE, script(SAMPLE, "right"))
    roles = [message["role"] for message in trajectory.messages]
    assert roles == ["system", "user", "assistant", "tool", "user", "assistant", "tool", "user",
                     "assistant"]  # fmt: skip
    assert trajectory.messages[4]["content"] == SAMPLE.question


async def test_the_tool_filter_keeps_the_tools_the_model_names() -> None:
    agent = AgentDojoAgent(defence="tool_filter")
    trajectory = await played_by(
        agent, SAMPLE, script(SAMPLE, "follow"), first="read_file, send_money"
    )
    assert trajectory.messages[2]["content"] == defence("tool_filter").tool_filter_prompt
    kept = [tool.name for tool in trajectory.setups[-1].tools]
    assert sorted(kept) == ["read_file", "send_money"]
    assert json.loads(trajectory.final_output or "")["tools"] == kept


def test_a_defence_it_does_not_have_names_those_it_has() -> None:
    with pytest.raises(ConfigError, match="tool_filter, spotlighting_with_delimiting"):
        AgentDojoAgent(defence="transformers_pi_detector")
