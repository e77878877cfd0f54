"""Scripted AgentDojo attempts played by our runner and reward, and beside AgentDojo's own."""

from __future__ import annotations

import httpx2
from openai import AsyncOpenAI

from agent_eval.agents.base import RunContext
from agent_eval.agents.trajectory import Trajectory
from agent_eval.benchmarks.agentdojo.reward import score_agentdojo
from agent_eval.benchmarks.agentdojo.runner import AgentDojoAgent
from agent_eval.data.records import Sample
from agent_eval.rewards.result import RewardResult
from agent_eval.testing.agentdojo_scripts import Script, official, replies
from agent_eval.testing.replies import Reply, ReplyMeta, chat_body

Verdicts = tuple[bool, bool | None]


async def played_by(
    agent: AgentDojoAgent, sample: Sample, played: Script, first: str | None = None
) -> Trajectory:
    """The agent's trajectory with the script's answers as the proxy would return them (after
    `first`, a text answer, when given: the tool filter's)."""
    left = ([Reply(content=first)] if first is not None else []) + list(replies(played))

    def answer(request: httpx2.Request) -> httpx2.Response:
        meta = ReplyMeta("chatcmpl-1", "scripted", 0, "scripted", 10, 1, False)
        return httpx2.Response(200, json=chat_body(left.pop(0), meta))

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(answer))
    async with AsyncOpenAI(base_url="http://scripted/v1", api_key="k", http_client=http) as client:
        ctx = RunContext(client=client, model="scripted", session_id=sample.id, seed=0)
        trajectory = await agent.run(sample, ctx)
    assert not left, f"{len(left)} scripted answers left unasked"
    assert trajectory.final_output is not None, trajectory.error
    return trajectory


async def ours(sample: Sample, played: Script) -> RewardResult:
    """The verdict of our runner (fed the script's answers) and reward, in this process."""
    trajectory = await played_by(AgentDojoAgent(), sample, played)
    return score_agentdojo(trajectory.final_output or "", sample.answer or "")


async def both(sample: Sample, played: Script) -> tuple[RewardResult, Verdicts]:
    """Our result, and AgentDojo's own (utility, security or None without an injection)."""
    return await ours(sample, played), official(sample, played)
