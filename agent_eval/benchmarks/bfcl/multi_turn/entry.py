"""An entry made ready to play as BFCL's generation step readies it: its functions, the ones
held back until a later turn, and what each turn says in either mode."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from agent_eval.benchmarks.bfcl.multi_turn.decode import Mode
from agent_eval.benchmarks.bfcl.multi_turn.package import bfcl_utils, constants, handler_utils

Json = dict[str, Any]


@dataclass
class PlayableEntry:
    """One entry with its function docs; `functions` grows as held-back ones are added."""

    id: str
    turns: list[list[Json]]
    functions: list[Json]
    held_back: dict[str, list[Json]] = field(default_factory=dict)
    """The docs BFCL adds at a turn (miss_func), by turn index as text, as its data keys them."""

    def tools(self) -> list[Json]:
        """The functions as OpenAI tools, converted as BFCL's OpenAI handler converts them."""
        utils = handler_utils()
        openapi = constants("type_mappings").GORILLA_TO_OPENAPI
        style = constants("enums").ModelStyle.OPENAI_COMPLETIONS
        tools: list[Json] = utils.convert_to_tool(self.functions, openapi, style)
        return tools

    def opening(self, index: int, mode: Mode) -> list[Json]:
        """What the user says at turn `index`; at a held-back turn, the functions are added
        and BFCL's own words say so (in prompt mode, with the functions in them)."""
        docs = self.held_back.get(str(index))
        if docs is None:
            return self.turns[index]
        prompts = constants("default_prompts")
        if mode == "fc":
            self.functions.extend(docs)
            return [
                {"role": "user", "content": prompts.DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC}
            ]
        text = prompts.DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_PROMPTING.format(functions=docs)
        return [{"role": "user", "content": text}]


def playable(raw: Json, mode: Mode) -> PlayableEntry:
    """`raw` (a data file's entry) completed with its function docs, hints included; in
    prompt mode the first turn opens with BFCL's system prompt listing the functions."""
    utils = bfcl_utils()
    (entry,) = utils.add_language_specific_hint_to_function_doc(
        utils.populate_test_cases_with_predefined_functions([copy.deepcopy(raw)])
    )
    turns = entry["question"]
    if mode == "prompt":
        turns[0] = handler_utils().system_prompt_pre_processing_chat_model(
            turns[0], entry["function"], entry["id"]
        )
    return PlayableEntry(entry["id"], turns, entry["function"], entry.get("missed_function", {}))
