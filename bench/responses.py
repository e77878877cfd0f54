"""Benchmark Responses API tool round trips through agent-eval and sglang-router.

Agents SDK code talks the Responses API. Mock workers play a calculator round trip
(the question with an `add` tool, an `add` call, the answer from the tool's result):
two serve /v1/responses as SGLang does, two do not, as llama.cpp does. Each router is
put in front of each pair and the same round trips run through it, plain and streamed;
the figures print side by side, with agent-eval's as ratios to sglang-router's.
With `--chained` the second request names the first by `previous_response_id` instead of
sending the conversation again (the proxy's store fills it in); `--history N` puts N earlier
messages before each question, as a long conversation has.
Run from the repository root:
`python -m bench.responses [--round-trips N] [--concurrency C] [--chained] [--history N]
[--json [PATH]]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from rich.console import Console
from rich.table import Table

from agent_eval.system.lifecycle import run_event_loop
from bench.parts.fleet import (
    Fleet,
    Proc,
    run_with_fleet,
    start_agent_eval,
    start_sglang_router,
    worker_urls,
)
from bench.parts.results_file import add_json_option, machine, write_results
from bench.parts.tables import ratio

MODEL = "mock-model"
ADD = {
    "type": "function",
    "name": "add",
    "description": "Add two numbers.",
    "parameters": {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    },
}
KINDS = {"native": [], "chat-only": ["--no-responses-api"]}
ROUTERS = ("agent-eval", "sglang-router")


@dataclass(frozen=True)
class Talk:
    """How round trips talk: `earlier` messages before the question, the answer `chained`."""

    earlier: list[dict[str, Any]] = field(default_factory=list)
    chained: bool = False

    @classmethod
    def of(cls, args: argparse.Namespace) -> Talk:
        turns = [("user", "Hi."), ("assistant", "Hello.")]
        earlier = [turns[i % 2] for i in range(args.history)]
        return cls([{"role": role, "content": text} for role, text in earlier], args.chained)


class RoundTripError(Exception):
    """One round trip went wrong; the message is the label it is counted under."""


@dataclass
class Load:
    """What one load run produced."""

    ok: int = 0
    failures: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    router_cpu: float = 0.0

    def rate(self) -> float:
        return self.ok / self.seconds if self.seconds else 0.0

    def cpu_ms(self) -> float | None:
        """Router CPU per finished round trip; None when none finished."""
        return 1000 * self.router_cpu / self.ok if self.ok else None

    def figures(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "failures": dict(self.failures),
            "seconds": self.seconds,
            "round_trips_per_s": self.rate(),
            "router_cpu_ms_per_round_trip": self.cpu_ms(),
        }


async def respond(http: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST /v1/responses; the final response object, streamed or not."""
    async with http.post(url + "/v1/responses", json=body) as answer:
        if answer.status != 200:
            raise RoundTripError(f"HTTP {answer.status}: {_error_message(await answer.text())}")
        if not body.get("stream"):
            return await answer.json()
        final = None
        async for line in answer.content:
            if line.startswith(b"data: "):
                event = json.loads(line[6:])
                if event.get("type") in {"response.completed", "response.failed"}:
                    final = event["response"]
    if final is None:
        raise RoundTripError("stream without a final response")
    return final


def _error_message(text: str) -> str:
    try:
        error = json.loads(text).get("error", {})
        return str(error.get("message") if isinstance(error, dict) else error)[:160]
    except (ValueError, AttributeError):
        return text[:160]


async def round_trip(
    http: aiohttp.ClientSession, url: str, index: int, stream: bool, talk: Talk
) -> None:
    """Question, tool call, tool result, answer; raises RoundTripError when any step is off."""
    question = [*talk.earlier, {"role": "user", "content": f"What is {index} plus 7?"}]
    ask = {"model": MODEL, "tools": [ADD], "stream": stream}
    first = await respond(http, url, {**ask, "input": question})
    calls = [item for item in first.get("output", []) if item.get("type") == "function_call"]
    if len(calls) != 1:
        raise RoundTripError("no single function_call in the first answer")
    arguments = json.loads(calls[0]["arguments"])
    result = str(float(arguments["a"]) + float(arguments["b"]))
    output = {"type": "function_call_output", "call_id": calls[0]["call_id"], "output": result}
    if talk.chained:
        follow_up = {**ask, "input": [output], "previous_response_id": first.get("id")}
    else:
        follow_up = {**ask, "input": [*question, calls[0], output]}
    second = await respond(http, url, follow_up)
    texts = [
        part.get("text", "")
        for item in second.get("output", [])
        if item.get("type") == "message"
        for part in item.get("content", [])
    ]
    if f"Answer: {result}" not in "".join(texts):
        raise RoundTripError("the answer does not carry the tool's result")


async def run_load(url: str, stream: bool, round_trips: int, concurrency: int, talk: Talk) -> Load:
    """`round_trips` round trips, `concurrency` at a time; failures counted by kind."""
    load = Load()
    gate = asyncio.Semaphore(concurrency)
    limit = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=limit) as http:

        async def one(index: int) -> None:
            async with gate:
                try:
                    await round_trip(http, url, index, stream, talk)
                except RoundTripError as exc:
                    load.failures[str(exc)] += 1
                else:
                    load.ok += 1

        started = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(round_trips)))
        load.seconds = time.perf_counter() - started
    return load


def measure(router: Proc, url: str, stream: bool, args: argparse.Namespace) -> Load:
    """A short warm-up, then the measured load and the router's CPU over it."""
    talk = Talk.of(args)
    run_event_loop(run_load(url, stream, args.concurrency, args.concurrency, talk))
    before = router.cpu_seconds()
    load = run_event_loop(run_load(url, stream, args.round_trips, args.concurrency, talk))
    load.router_cpu = router.cpu_seconds() - before
    return load


def start_routers(fleet: Fleet, kind: str) -> dict[str, tuple[Proc, str]]:
    """Two mock workers of `kind`, and each router in front of them."""
    argv = [sys.executable, "-m", "agent_eval.testing.mock_worker", "--two-step", *KINDS[kind]]
    workers = [fleet.start(f"{kind}-{i}", [*argv, "--name", f"{kind}-{i}"]) for i in range(2)]
    urls = worker_urls(workers)
    proxy, proxy_url = start_agent_eval(fleet, urls, "round_robin")
    router, router_url = start_sglang_router(fleet, urls, "round_robin")
    return {"agent-eval": (proxy, proxy_url), "sglang-router": (router, router_url)}


def _cell(load: Load, total: int) -> list[str]:
    cpu = load.cpu_ms()
    return [
        f"{load.ok}/{total}",
        f"{load.rate():.0f}" if load.ok else "-",
        f"{cpu:.2f}" if cpu is not None else "-",
    ]


def report(results: dict[tuple[str, str, str], Load], args: argparse.Namespace) -> None:
    title = f"Responses API tool round trips, concurrency {args.concurrency}"
    title += ", chained by previous_response_id" if args.chained else ""
    title += f", {args.history} earlier messages" if args.history else ""
    table = Table(title=title)
    for name in ("workers", "mode", "router"):
        table.add_column(name)
    for name in ("round trips ok", "round trips/s", "router CPU ms/rt"):
        table.add_column(name, justify="right")
    for kind in KINDS:
        for mode in ("plain", "streamed"):
            ours, theirs = (results[(kind, mode, router)] for router in ROUTERS)
            for router, load in zip(ROUTERS, (ours, theirs), strict=True):
                table.add_row(kind, mode, router, *_cell(load, args.round_trips))
            rate, cpu = ratio(ours.rate(), theirs.rate()), ratio(ours.cpu_ms(), theirs.cpu_ms())
            table.add_row("", "", "[dim]agent-eval / sglang-router[/]", "", rate, cpu)
    console = Console(width=110)
    console.print(table)
    for (kind, mode, router), load in results.items():
        for failure, count in load.failures.most_common(2):
            console.print(f"{router} over {kind} workers, {mode}: {count} x {failure}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--round-trips", type=int, default=400, help="measured, per cell")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--chained", action="store_true", help="follow up by previous_response_id")
    parser.add_argument("--history", type=int, default=0, help="earlier messages per question")
    parser.add_argument("--keep", action="store_true", help="keep the logs")
    add_json_option(parser, "responses")
    args = parser.parse_args()
    about = machine()

    def body(fleet: Fleet, work: object) -> None:
        results: dict[tuple[str, str, str], Load] = {}
        for kind in KINDS:
            print(f"starting 2 {kind} mock workers, agent-eval and sglang-router ...")
            routers = start_routers(fleet, kind)
            for mode, stream in (("plain", False), ("streamed", True)):
                for router, (proc, url) in routers.items():
                    results[(kind, mode, router)] = measure(proc, url, stream, args)
        report(results, args)
        cells = [
            {"workers": kind, "mode": mode, "router": router, **load.figures()}
            for (kind, mode, router), load in results.items()
        ]
        write_results(args, {"cells": cells}, about)

    run_with_fleet("responses", args.keep, body)


if __name__ == "__main__":
    main()
