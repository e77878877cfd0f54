"""bfcl: plays a BFCL entry through the proxy, single-turn here, multi-turn in `multi_turn.play`."""

from __future__ import annotations

from dataclasses import dataclass

from agent_eval.agents.base import RunContext
from agent_eval.agents.trajectory import Trajectory
from agent_eval.benchmarks.bfcl.categories import is_multi_turn
from agent_eval.benchmarks.bfcl.multi_turn.play import play_multi_turn
from agent_eval.benchmarks.bfcl.single_turn import Mode, play_single_turn
from agent_eval.data.records import Sample
from agent_eval.shims.bfcl_checker import bfcl_module

MAX_STEPS: int = bfcl_module("constants.default_prompts").MAXIMUM_STEP_LIMIT


@dataclass(frozen=True)
class BfclOptions:
    """How entries are played: what a multi-turn play reads too."""

    mode: Mode = "fc"
    max_steps: int = MAX_STEPS
    """Model calls per user turn of a multi-turn entry (BFCL's own limit by default)."""


class BfclAgent:
    """`mode="fc"`: the functions as tools (native tool calling); `mode="prompt"`: in the system
    prompt, for models without it, decoded from the answer's text as BFCL decodes it."""

    def __init__(self, mode: Mode = "fc", max_steps: int = MAX_STEPS) -> None:
        self.options = BfclOptions(mode, max_steps)

    async def run(self, sample: Sample, ctx: RunContext) -> Trajectory:
        if is_multi_turn(sample.metadata["bfcl_category"]):
            return await play_multi_turn(sample, ctx, self.options)
        return await play_single_turn(sample, ctx, self.options.mode)
