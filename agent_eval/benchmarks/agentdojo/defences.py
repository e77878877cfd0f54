"""AgentDojo's prompt and tool-filter defences, read from the pipeline AgentDojo builds for each.

AgentDojo writes some of its defences inline where it assembles a pipeline (spotlighting's
system prompt and delimiters), so each is read from the pipeline its own `from_config` builds:
the system message, the tool-output formatter, the tool filter's prompt, whether the user's
prompt is repeated after tool results. The model element in it is never called.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from agentdojo.agent_pipeline.agent_pipeline import AgentPipeline, PipelineConfig
from agentdojo.agent_pipeline.basic_elements import InitQuery, SystemMessage
from agentdojo.agent_pipeline.llms.openai_llm import OpenAILLM, OpenAILLMToolFilter
from agentdojo.agent_pipeline.tool_execution import ToolsExecutionLoop, ToolsExecutor

from agent_eval.errors import ConfigError

DEFENCES = ("tool_filter", "spotlighting_with_delimiting", "repeat_user_prompt")
"""AgentDojo's defences that are prompts or tool filters (its fourth needs a detector model)."""


@dataclass(frozen=True)
class Defence:
    """How a defence changes the play: the system prompt, tool outputs, tools and prompts."""

    name: str | None
    system_prompt: str
    format_result: Callable[[Any], str]
    tool_filter_prompt: str | None
    repeats_prompt: bool


def check_defence(name: str | None) -> None:
    """Refuse a defence that is not one of DEFENCES (None: no defence)."""
    if name is not None and name not in DEFENCES:
        raise ConfigError(
            f"agent 'agentdojo' has no defence {name!r}; choose one of {', '.join(DEFENCES)} "
            "(option defence), or none"
        )


@cache
def defence(name: str | None) -> Defence:
    """The defence `name` (None: AgentDojo's plain pipeline) as AgentDojo builds it."""
    check_defence(name)
    llm = OpenAILLM(client=None, model="agent-eval")  # type: ignore[arg-type]
    llm.name = "agent-eval"
    config = PipelineConfig(
        llm=llm, model_id=None, defense=name, system_message_name=None, system_message=None
    )
    elements = list(AgentPipeline.from_config(config).elements)
    loop = next(e for e in elements if isinstance(e, ToolsExecutionLoop)).elements
    return Defence(
        name=name,
        system_prompt=next(e for e in elements if isinstance(e, SystemMessage)).system_message,
        format_result=next(e for e in loop if isinstance(e, ToolsExecutor)).output_formatter,
        tool_filter_prompt=next(
            (e.prompt for e in elements if isinstance(e, OpenAILLMToolFilter)), None
        ),
        repeats_prompt=any(isinstance(e, InitQuery) for e in loop),
    )
