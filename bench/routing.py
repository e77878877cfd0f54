"""Benchmark routing policies on a multi-turn agent workload over simulated-cache mock workers.

Eight mock workers simulate a prefix KV cache (an LRU of 16-token blocks, a prefill delay per
uncached token, one prefill at a time). Hundreds of agent sessions run at once, all with the
same system prompt and tool definitions (about 4 KB). Each turn a session sends a user message
with its own pasted context, gets a calculator call, sends the tool's result and gets the
answer: two requests per turn, each carrying the whole history. The workload is played through
agent-eval's proxy with each policy, and through sglang-router's cache_aware, with and without
an X-Session-ID header, each from cold caches and a fresh router. The hit rate comes from the
workers' own counts of prompt and cached tokens. `--processes 1,2` plays each agent-eval policy
through `serve --processes N` for each N (sglang-router is one process).
Run from the repository root:
`python -m bench.routing [--sessions N] [--turns T] [--processes 1,2] [--json [PATH]]`.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import random
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from rich import box
from rich.console import Console
from rich.table import Table

from agent_eval.errors import ConfigError
from agent_eval.proxy.policies import POLICIES
from agent_eval.system.lifecycle import run_event_loop
from bench.parts.fleet import Fleet, Proc, run_with_fleet, start_agent_eval, start_mock_workers
from bench.parts.fleet import start_sglang_router as start_sglang
from bench.parts.loadgen import percentile
from bench.parts.results_file import add_json_option, describe, machine, write_results
from bench.parts.tables import number, ratio, wide_console

MODEL = "mock-model"
PEER = ("sglang-router", "cache_aware")
# sglang-router's sticky policy, `manual`, keys on this header; agent-eval on X-Session-ID.
PEER_SESSION_HEADER = "X-SMG-Routing-Key"
WORDS = ("alpha", "beta", "gamma", "delta", "kernel", "tensor", "cache", "block", "route", "queue")
STATS_FIELDS = ("generation_requests", "prompt_tokens", "cached_tokens")
SYSTEM = " ".join(
    f"Rule {i}: work step by step, call a tool when a number must be computed, "
    "and never guess a result the tools can give."
    for i in range(20)
)
TOOL_NAMES = ("add", "subtract", "multiply", "divide", "search_docs", "read_file", "run_tests")


def _tool(name: str) -> dict[str, Any]:
    parameters = {
        "type": "object",
        "properties": {
            "a": {"type": "number", "description": f"The first operand of {name}."},
            "b": {"type": "number", "description": f"The second operand of {name}."},
        },
        "required": ["a", "b"],
    }
    description = f"{name}: a deterministic tool of the benchmark's agent; returns a number."
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


TOOLS = [_tool(name) for name in TOOL_NAMES]


class StepError(Exception):
    """One request of a session failed; the message is the label it is counted under."""


@dataclass(frozen=True)
class Workload:
    """What every configuration plays: sessions of turns, each turn two requests."""

    sessions: int
    turns: int
    context_bytes: int  # session-specific text pasted into each user message
    seed: int

    def user_message(self, run: str, session: int, turn: int) -> dict[str, str]:
        """A user turn: this session's pasted context, then a sum to compute."""
        rng = random.Random(f"{self.seed}/{run}/{session}/{turn}")
        context = ""
        while len(context) < self.context_bytes:
            context += rng.choice(WORDS) + f"-{rng.randrange(10**6)} "
        question = f"What is {rng.randrange(1000)} + {rng.randrange(1000)}?"
        return {"role": "user", "content": f"Session {session} context: {context}\n{question}"}


@dataclass(frozen=True)
class Config:
    """One routed run: which router, which policy, on how many processes, with or without
    session ids."""

    router: str
    policy: str
    session_ids: bool
    processes: int = 1

    @property
    def label(self) -> str:
        ids = "with" if self.session_ids else "without"
        return f"{self.router} {self.policy} x{self.processes} {ids} ids"


@dataclass
class Tally:
    """What the clients saw in one run."""

    latencies: list[float] = field(default_factory=list)
    failures: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    # (sent, answered, worker) of each answered request; the worker as it names itself.
    spans: list[tuple[float, float, str]] = field(default_factory=list)


@dataclass(frozen=True)
class Result:
    """The figures of one configuration."""

    router: str
    policy: str
    session_ids: bool
    processes: int
    requests: int
    failures: int
    hit_rate: float  # cached / prompt tokens, as the workers counted them
    mean_ms: float
    p99_ms: float
    max_avg_load: float  # the busiest worker's requests over the mean
    rps: float
    per_worker: list[int]
    errors: dict[str, int]


async def _ask(
    http: aiohttp.ClientSession,
    url: str,
    body: dict[str, Any],
    headers: dict[str, str],
    tally: Tally,
) -> dict[str, Any]:
    """One chat completion; its message. Raises: StepError when the answer is not one."""
    started = time.perf_counter()
    try:
        async with http.post(url, data=orjson.dumps(body), headers=headers) as answer:
            payload = await answer.read()
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        raise StepError(type(exc).__name__) from None
    answered = time.perf_counter()
    if answer.status != 200:
        raise StepError(f"HTTP {answer.status}: {payload[:100].decode(errors='replace')}")
    tally.latencies.append(answered - started)
    try:
        completion = orjson.loads(payload)
        message: dict[str, Any] = completion["choices"][0]["message"]
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
        raise StepError("an answer without a message") from None
    # Mock workers put their name there; both routers pass the body on as it came.
    tally.spans.append((started, answered, str(completion.get("system_fingerprint"))))
    return message


def _tool_result(message: dict[str, Any]) -> dict[str, Any]:
    """The tool turn answering the call in `message`. Raises: StepError when it has none."""
    try:
        call = message["tool_calls"][0]
        arguments = json.loads(call["function"]["arguments"])
        value = float(arguments["a"]) + float(arguments["b"])
    except (KeyError, IndexError, TypeError, ValueError):
        raise StepError("the first answer of a turn is not a calculator call") from None
    return {"role": "tool", "tool_call_id": call["id"], "content": f"{value:g}"}


async def play_session(
    http: aiohttp.ClientSession,
    url: str,
    workload: Workload,
    run: str,
    index: int,
    tally: Tally,
    session_ids: bool,
) -> None:
    """Play one session's turns; its first failure ends it and is counted."""
    headers = {"Content-Type": "application/json"}
    if session_ids:
        headers["X-Session-ID"] = headers[PEER_SESSION_HEADER] = f"{run}-{index}"
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    ask = {"model": MODEL, "tools": TOOLS, "max_tokens": 64, "temperature": 0.0}
    try:
        for turn in range(workload.turns):
            messages.append(workload.user_message(run, index, turn))
            for _ in range(2):  # the calculator call, then the answer to its result
                message = await _ask(http, url, {**ask, "messages": messages}, headers, tally)
                messages.append({k: v for k, v in message.items() if v is not None})
                if message.get("tool_calls"):
                    messages.append(_tool_result(message))
    except StepError as exc:
        tally.failures[str(exc)] += 1


async def _worker_counts(http: aiohttp.ClientSession, workers: list[str]) -> list[list[int]]:
    """Generation requests, prompt tokens and cached tokens of each worker, by its own count."""

    async def one(url: str) -> list[int]:
        async with http.get(url + "/mock/stats") as answer:
            stats = await answer.json()
        return [int(stats[name]) for name in STATS_FIELDS]

    return list(await asyncio.gather(*(one(url) for url in workers)))


async def _clear_caches(http: aiohttp.ClientSession, workers: list[str]) -> None:
    async def one(url: str) -> None:
        async with http.delete(url + "/mock/cache") as answer:
            answer.raise_for_status()

    await asyncio.gather(*(one(url) for url in workers))


async def measure(
    url: str, workers: list[str], workload: Workload, run: str, session_ids: bool, concurrency: int
) -> tuple[Tally, list[list[int]]]:
    """Cold caches, the workload's sessions through `url`, `concurrency` of them at a time (the
    next starting as one ends); what the clients saw and what each worker counted."""
    tally = Tally()
    timeout = aiohttp.ClientTimeout(total=300)
    connector = aiohttp.TCPConnector(limit=concurrency + len(workers))
    async with aiohttp.ClientSession(
        connector=connector, timeout=timeout, cookie_jar=aiohttp.DummyCookieJar()
    ) as http:
        await _clear_caches(http, workers)
        before = await _worker_counts(http, workers)
        chat, sessions = url + "/v1/chat/completions", itertools.count()
        started = time.perf_counter()

        async def slot() -> None:
            while (index := next(sessions)) < workload.sessions:
                await play_session(http, chat, workload, run, index, tally, session_ids)

        await asyncio.gather(*(slot() for _ in range(concurrency)))
        tally.seconds = time.perf_counter() - started
        after = await _worker_counts(http, workers)
    spent = [
        [a - b for a, b in zip(w1, w0, strict=True)] for w0, w1 in zip(before, after, strict=True)
    ]
    return tally, spent


async def play(config: Config, url: str, workers: list[str], workload: Workload) -> Result:
    """Every session at once through `url`, from cold caches, and the figures of the run."""
    run = config.label.replace(" ", "-")
    measured = await measure(url, workers, workload, run, config.session_ids, workload.sessions)
    return result(config, *measured)


def result(config: Config, tally: Tally, spent: list[list[int]]) -> Result:
    """The figures of one run from the clients' tally and the workers' counts."""
    per_worker, prompt, cached = ([counts[i] for counts in spent] for i in range(3))
    latencies = sorted(tally.latencies)
    mean_load = statistics.mean(per_worker) if per_worker else 0.0
    return Result(
        router=config.router,
        policy=config.policy,
        session_ids=config.session_ids,
        processes=config.processes,
        requests=len(latencies),
        failures=sum(tally.failures.values()),
        hit_rate=sum(cached) / sum(prompt) if sum(prompt) else math.nan,
        mean_ms=statistics.mean(latencies) * 1000 if latencies else math.nan,
        p99_ms=percentile(latencies, 0.99) * 1000,
        max_avg_load=max(per_worker) / mean_load if mean_load else math.nan,
        rps=len(latencies) / tally.seconds if tally.seconds else 0.0,
        per_worker=per_worker,
        errors=dict(tally.failures.most_common(3)),
    )


def configs(policies: Sequence[str], processes: Sequence[int]) -> list[Config]:
    """Every policy on each number of processes with and without session ids, then the peer."""
    routed = [("agent-eval", policy, n) for policy in policies for n in processes]
    return [
        Config(router, policy, ids, n)
        for router, policy, n in [*routed, (*PEER, 1)]
        for ids in (False, True)
    ]


def known_policies(wanted: Sequence[str], console: Console) -> list[str]:
    """The wanted policies this agent-eval has; each missing one is named and skipped."""
    known = []
    for name in wanted:
        try:
            known.append(POLICIES.check(name))
        except ConfigError as exc:
            console.print(f"[yellow]skipping policy {name!r}:[/] {exc}", highlight=False)
    return known


def start_router(fleet: Fleet, config: Config, workers: list[str]) -> tuple[Proc, str]:
    if config.router == PEER[0]:
        return start_sglang(fleet, workers, config.policy)
    run_dir = fleet.log_dir / config.label.replace(" ", "-")
    extra = ("--processes", str(config.processes), "--run-dir", str(run_dir))
    return start_agent_eval(fleet, workers, config.policy, extra)


def _cell(value: float, peer: float, text: str) -> str:
    return f"{text} [dim]{ratio(value, peer)}[/]"


def table(results: list[Result], workload: Workload) -> Table:
    """One row per configuration; each figure with its ratio to cache_aware's in the same mode."""
    title = (
        f"routing on {workload.sessions} agent sessions x {workload.turns} turns x 2 requests, "
        "8 simulated-cache workers (dim: ÷ sglang-router cache_aware)"
    )
    grid = Table(box=box.SIMPLE_HEAD, title=title)
    for name in ("router", "policy", "processes", "session ids"):
        grid.add_column(name)
    for name in ("hit rate", "mean ms", "p99 ms", "max/avg load", "req/s", "failures"):
        grid.add_column(name, justify="right")
    peers = {r.session_ids: r for r in results if (r.router, r.policy) == PEER}
    for r in results:
        peer = peers.get(r.session_ids, r)
        grid.add_row(
            r.router,
            r.policy,
            str(r.processes),
            "yes" if r.session_ids else "no",
            _cell(r.hit_rate, peer.hit_rate, f"{r.hit_rate:.1%}"),
            _cell(r.mean_ms, peer.mean_ms, number(r.mean_ms)),
            _cell(r.p99_ms, peer.p99_ms, number(r.p99_ms)),
            _cell(r.max_avg_load, peer.max_avg_load, f"{r.max_avg_load:.2f}"),
            _cell(r.rps, peer.rps, number(r.rps)),
            str(r.failures),
        )
    return grid


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200, help="agent sessions, all at once")
    parser.add_argument("--turns", type=int, default=4, help="turns per session, 2 requests each")
    parser.add_argument(
        "--context-bytes", type=int, default=1200, help="session text in each user message"
    )
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument(
        "--policies",
        default="round_robin,session,least_requests,prefix",
        help="agent-eval policies, comma-separated; unknown ones are skipped with a note",
    )
    parser.add_argument(
        "--cache-tokens", type=int, default=131_072, help="each worker's prefix cache"
    )
    parser.add_argument(
        "--prefill-ms-per-token", type=float, default=0.05, help="prefill delay per uncached token"
    )
    parser.add_argument(
        "--processes",
        default="1",
        help="agent-eval proxy processes, comma-separated: each policy runs on each number",
    )
    parser.add_argument("--seed", type=int, default=0)
    add_json_option(parser, "routing")
    parser.add_argument("--keep", action="store_true", help="keep the logs")
    return parser.parse_args()


def _worker_options(args: argparse.Namespace) -> list[str]:
    return [
        "--two-step",
        "--prefix-cache",
        "--cache-tokens", str(args.cache_tokens),
        "--prefill-ms-per-token", str(args.prefill_ms_per_token),
    ]  # fmt: skip


def main() -> None:
    args = _parse_args()
    console = wide_console(140)
    workload = Workload(args.sessions, args.turns, args.context_bytes, args.seed)
    policies = known_policies([p for p in args.policies.split(",") if p], console)
    processes = [int(n) for n in args.processes.split(",") if n]
    about = machine()

    def body(fleet: Fleet, work: Path) -> None:
        console.print(f"starting {args.workers} simulated-cache mock workers ...")
        names = [f"w{i}" for i in range(args.workers)]
        workers = start_mock_workers(fleet, names, _worker_options(args))
        results = []
        for config in configs(policies, processes):
            router, url = start_router(fleet, config, workers)
            results.append(run_event_loop(play(config, url, workers, workload)))
            fleet.stop_one(router)
            r = results[-1]
            console.print(
                f"  {config.label:<48} hit {r.hit_rate:6.1%}  mean {r.mean_ms:7.1f} ms"
                f"  p99 {r.p99_ms:7.1f} ms  load {r.max_avg_load:4.2f}  {r.rps:6.1f} req/s"
                f"  failures {r.failures}",
                highlight=False,
            )
        console.print(table(results, workload))
        console.print(describe(about), highlight=False, soft_wrap=True)
        write_results(args, {"results": [asdict(r) for r in results]}, about)

    run_with_fleet("routing", args.keep, body)


if __name__ == "__main__":
    main()
