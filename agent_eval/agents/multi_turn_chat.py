"""multi_turn_chat: a session of user turns, each sent with the whole history so far."""

from __future__ import annotations

from typing import Any

from agent_eval.agents.base import RunContext
from agent_eval.agents.calculator import calculator_tools
from agent_eval.agents.sdk import Api, play, sdk_agent
from agent_eval.agents.trajectory import Trajectory

INSTRUCTIONS = (
    "You are a careful assistant answering arithmetic questions in a conversation. "
    "Later questions may build on earlier answers. If asked to check an answer, re-check it "
    "and keep it if it is right. End every reply with the answer on its own line, like: Answer: 42"
)


class MultiTurnChatAgent:
    """Plays a session turn by turn; `turn_outputs` holds one reply per turn (None once failed)."""

    def __init__(
        self, tools: bool = False, max_turns: int = 6, api: Api = "chat_completions"
    ) -> None:
        self.tools = tools
        self.max_turns = max_turns
        self.api = api

    async def run(self, session: Any, ctx: RunContext) -> Trajectory:
        tools = calculator_tools() if self.tools else []
        agent = sdk_agent("multi_turn_chat", INSTRUCTIONS, tools, ctx, self.api)
        trajectory = ctx.trajectory
        history: list[Any] = []
        for turn in session.turns:
            if trajectory.error is not None:
                trajectory.turn_outputs.append(None)
                continue
            given = [*history, {"role": "user", "content": turn.user}]
            result = await play(agent, given, self.max_turns, trajectory)
            output = None if result is None else str(result.final_output)
            trajectory.turn_outputs.append(output)
            history = given if result is None else result.to_input_list()
        trajectory.final_output = trajectory.turn_outputs[-1] if trajectory.turn_outputs else None
        return trajectory
