"""A tool of AgentDojo's in OpenAI's format, as AgentDojo's own OpenAI element sends it.

`agentdojo.agent_pipeline.llms.openai_llm._function_to_openai` is private; the tool a model is
shown must be the one AgentDojo shows it (name, description, the JSON Schema of its arguments
from the function's pydantic model). Checked against agentdojo 0.1.35.
"""

from __future__ import annotations

from typing import Any


def openai_tool(function: Any) -> dict[str, Any]:
    """The Chat Completions tool for an AgentDojo `Function`."""
    from agentdojo.agent_pipeline.llms.openai_llm import _function_to_openai

    return dict(_function_to_openai(function))
