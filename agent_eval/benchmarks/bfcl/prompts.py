"""What the model is given for a BFCL entry, built by BFCL's own functions as its OpenAI
handlers build it: the functions as OpenAI tools (fc mode), or written into the system prompt
(prompt mode), with the language hints BFCL adds to their descriptions at inference."""

from __future__ import annotations

import copy
from typing import Any

from agent_eval.shims.bfcl_checker import bfcl_module

_handler_utils = bfcl_module("model_handler.utils")
_utils = bfcl_module("utils")
_type_mappings = bfcl_module("constants.type_mappings")
_enums = bfcl_module("constants.enums")


def hinted_functions(functions: list[dict[str, Any]], category: str) -> list[dict[str, Any]]:
    """The entry's function docs as BFCL gives them to a model: with its language hints."""
    # BFCL reads the category from the prefix of an entry's id; the number is never read.
    entry = {"id": f"{category}_0", "function": copy.deepcopy(functions)}
    return list(_utils.add_language_specific_hint_to_function_doc([entry])[0]["function"])


def openai_tools(functions: list[dict[str, Any]], category: str) -> list[dict[str, Any]]:
    """Chat Completions tools, as BFCL's OpenAI function-calling handler compiles them."""
    style = _enums.ModelStyle.OPENAI_COMPLETIONS
    hinted = hinted_functions(functions, category)
    return list(_handler_utils.convert_to_tool(hinted, _type_mappings.GORILLA_TO_OPENAPI, style))


def prompt_messages(
    messages: list[dict[str, Any]], functions: list[dict[str, Any]], category: str
) -> list[dict[str, Any]]:
    """The messages with BFCL's default system prompt naming the functions (prompt mode)."""
    hinted = hinted_functions(functions, category)
    given = copy.deepcopy(messages)
    return list(_handler_utils.system_prompt_pre_processing_chat_model(given, hinted, "entry_0"))
