"""Scripted AgentDojo attempts played by our runner and reward, and beside AgentDojo's own."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx2
import pytest
import yaml
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


def libyaml_load(text: str) -> Any:
    """YAML as yaml.safe_load reads it, by PyYAML's C scanner (libyaml)."""
    return yaml.load(text, Loader=yaml.CSafeLoader)


@contextmanager
def libyaml() -> Iterator[None]:
    """yaml.safe_load by libyaml meanwhile: AgentDojo parses a suite's environment for each
    item on both sides, and PyYAML's pure-Python scanner takes 0.8 s of travel's, 10 times
    libyaml (the agreement test checks both read the environments alike)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(yaml, "safe_load", libyaml_load)
        yield


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
