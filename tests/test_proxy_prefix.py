"""The prefix policy through the real proxy: unmodified clients' conversations stay put."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from openai import AsyncOpenAI

from agent_eval.wire import WORKER_HEADER
from tests.helpers.proxy import MakeClient, StartProxy, StartWorkers

MODEL = "mock-model"
SYSTEM = "You are a calculator agent: call add, then answer."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two numbers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            },
        },
    }
]


@dataclass
class Conversation:
    """A tool-calling chat as an unmodified agent plays it: the whole history every call."""

    client: AsyncOpenAI
    topic: str
    messages: list[Any] = field(default_factory=list)
    served_by: list[str] = field(default_factory=list)

    async def ask(self, question: str) -> None:
        """One user turn: the model calls add, gets its result, answers."""
        if not self.messages:
            self.messages.append({"role": "system", "content": SYSTEM})
        self.messages.append({"role": "user", "content": question})
        while True:
            raw = await self.client.chat.completions.with_raw_response.create(
                model=MODEL,
                messages=self.messages,
                tools=TOOLS,  # type: ignore[arg-type]
            )
            self.served_by.append(raw.headers[WORKER_HEADER])
            message = raw.parse().choices[0].message
            self.messages.append(message)  # the SDK's object, sent back as agents do
            if not message.tool_calls:
                return
            for call in message.tool_calls:
                self.messages.append({"role": "tool", "tool_call_id": call.id, "content": "42"})

    async def follow_up(self, turns: int) -> None:
        for turn in range(turns):
            await self.ask(f"Now add {turn} and {turn + 1} for the {self.topic} ledger.")


def opening(topic: str) -> str:
    """A first question of its own, longer than what every conversation shares."""
    return f"About {topic}: " + f"the {topic} ledger lists 3 and 4 among its entries. " * 12


async def test_conversations_without_session_ids_stay_on_their_cached_worker(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    workers = await start_workers(3)
    for worker in workers:
        worker.behavior.two_step = True  # each turn: a call to add, its result, the answer
    client = make_client(await start_proxy(workers, policy="prefix"))
    conversations = [Conversation(client, f"topic-{i}") for i in range(6)]
    for conversation in conversations:
        await conversation.ask(opening(conversation.topic))
    await asyncio.gather(*(c.follow_up(turns=4) for c in conversations))
    for conversation in conversations:
        assert len(conversation.served_by) == 10
        assert len(set(conversation.served_by)) == 1, conversation.served_by
    homes = [c.served_by[0] for c in conversations]
    assert sorted(homes.count(w.url) for w in workers) == [2, 2, 2]
