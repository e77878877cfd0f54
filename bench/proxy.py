"""Benchmark the agent-eval proxy against sglang-router and direct access, on loopback.

Two mock workers, our proxy and sglang-router run as processes; a fresh load-generator
process measures each (mode, target) pair. The same load also goes to the proxy's Anthropic
Messages route (translated to chat for the workers), shown beside its chat figures. With
`--tokens` the workers speak vLLM's token fields and a second agent-eval asks for every keyed
call's token ids and logprobs (`capture.tokens`), beside the keyed one that does not. With
`--processes 1,2` agent-eval also runs as 2 processes on one port, shown beside the single one
and sglang-router as ratios; `--cap-cores 0.3` holds each proxy process to 0.3 of a core (and
sglang-router to 0.3 per process it is measured beside) with cgroups. Run from the repository
root: `python -m bench.proxy [--requests N] [--concurrency C] [--tokens] [--processes 1,2]
[--cap-cores C] [--json [PATH]]`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from bench.parts import ROOT
from bench.parts.cpu_cap import CpuCaps, find_controller
from bench.parts.fleet import (
    BenchError,
    Fleet,
    Proc,
    children,
    exit_on_sigterm,
    start_agent_eval,
    start_sglang_router,
    worker_urls,
)
from bench.parts.loadgen import LoadResult
from bench.parts.process_tables import PEER, group_name, peer_name, processes_table
from bench.parts.results_file import add_json_option, machine, write_results
from bench.parts.tables import MESSAGES_TARGET, Mode, Run, combine, render, wide_console

RUN_TIMEOUT = 300.0
# Our policy and sglang-router's nearest one, the peer it is measured beside.
PEER_POLICIES = {
    "round_robin": "round_robin",
    "power_of_two": "power_of_two",
    "prefix": "cache_aware",
}


BENCH_ADMIN_TOKEN = "bench-admin-token"


@dataclass
class Target:
    """Where the load goes: base URLs, and the routing process whose CPU is counted.

    `keyed`: each measured run sends with an attempt key of its own (in the path), recorded
    by the proxy as that attempt's calls."""

    name: str
    urls: list[str]
    router: Proc | None
    messages: bool = False
    """The load speaks Anthropic's Messages API, to /v1/messages."""
    keyed: bool = False
    processes: int = 1
    """agent-eval's processes (each capped alone); sglang-router's cap is this many shares."""


def start_workers(fleet: Fleet, tokens: bool) -> list[Proc]:
    """Two mock workers (speaking vLLM's token fields with `tokens`); their base URLs come
    from the READY lines."""
    argv = [sys.executable, "-m", "agent_eval.testing.mock_worker", "--port", "0"]
    argv += ["--token-fields", "vllm"] if tokens else []
    return [
        fleet.start(name, [*argv, "--name", name, "--model", "mock-model"]) for name in ("w0", "w1")
    ]


def start_targets(
    fleet: Fleet, policy: str, keyed: bool, tokens: bool, processes: list[int], capped: bool
) -> tuple[list[Proc], list[Target]]:
    """Start everything and wait until each answers; the workers and the targets (agent-eval
    twice with `keyed`: without and with attempt keys; a third with `tokens`, keyed, asking
    for every call's tokens; one more for each count of proxy processes past 1; when `capped`,
    one sglang-router per count, to be capped at that many shares)."""
    workers = start_workers(fleet, tokens)
    urls = worker_urls(workers)
    token = ("--admin-token", BENCH_ADMIN_TOKEN)
    proxy, proxy_url = start_agent_eval(fleet, urls, policy, (*token, "--processes", "1"))
    groups = []
    for count in (n for n in processes if n > 1):
        logs = f"agent-eval-{count}p"
        extra = (*token, "--processes", str(count), "--run-dir", str(fleet.log_dir / logs))
        group, group_url = start_agent_eval(fleet, urls, policy, extra, name=logs)
        groups.append(Target(group_name(count), [group_url], group, processes=count))
    peers = [
        _peer(fleet, urls, policy, count) for count in dict.fromkeys([1, *processes]) if capped
    ] or [_peer(fleet, urls, policy, 1)]
    keyed_target = [Target("agent-eval keyed", [proxy_url], proxy, keyed=True)] if keyed else []
    if tokens:
        capture = (*token, "proxy.capture.tokens=true")
        tokened, tokened_url = start_agent_eval(fleet, urls, policy, capture, name="tokens")
        keyed_target.append(Target("agent-eval tokens", [tokened_url], tokened, keyed=True))
    return workers, [
        Target("direct", urls, None),
        Target("agent-eval", [proxy_url], proxy),
        *groups,
        *keyed_target,
        *peers,
        Target(MESSAGES_TARGET, [proxy_url], proxy, messages=True),
    ]


def _peer(fleet: Fleet, urls: list[str], policy: str, shares: int) -> Target:
    """sglang-router, to be measured beside agent-eval on `shares` processes."""
    name = peer_name(shares)
    router, url = start_sglang_router(fleet, urls, PEER_POLICIES[policy], name=name)
    return Target(name, [url], router, processes=shares)


def cap_targets(caps: CpuCaps, targets: list[Target], cores: float) -> None:
    """Each agent-eval process (a group's parent, which only holds the port, too) in a cgroup
    of `cores`; each sglang-router, all threads, in one of `cores` per share."""
    routers = {target.router.pid: target for target in reversed(targets) if target.router}
    for pid, target in routers.items():
        if target.name.startswith(PEER):
            caps.cap(target.name.replace(" ", "-"), [pid], cores * target.processes)
            continue
        members = children(pid) if target.processes > 1 else []
        if target.processes > 1 and len(members) != target.processes:
            raise BenchError(f"{target.name}: found processes {members} under {pid}")
        for index, member in enumerate([pid, *members]):
            caps.cap(f"{target.name.replace(' ', '-')}-{index}", [member], cores)


def _attempt(method: str, url: str, body: bytes | None = None) -> dict[str, Any]:
    """One call of the proxy's attempts API, with the bench's admin token."""
    headers = {"Authorization": f"Bearer {BENCH_ADMIN_TOKEN}", "Content-Type": "application/json"}
    request = urllib.request.Request(url, body, headers, method=method)
    with urllib.request.urlopen(request, timeout=60) as answer:
        return dict(json.loads(answer.read()))


@contextlib.contextmanager
def _keyed(target: Target) -> Iterator[list[str]]:
    """The target's URLs; when keyed, each with a fresh attempt key, ended after the run."""
    if not target.keyed:
        yield target.urls
        return
    keys = [
        _attempt("POST", f"{url}/attempts", b'{"attempt": "bench"}')["key"] for url in target.urls
    ]
    try:
        yield [f"{url}/a/{key}" for url, key in zip(target.urls, keys, strict=True)]
    finally:
        for url, key in zip(target.urls, keys, strict=True):
            _attempt("DELETE", f"{url}/attempts/{key}")


def _load(argv: list[str], target: str) -> LoadResult:
    """Run one load-generator process. Raises: BenchError when it fails or overruns."""
    try:
        done = subprocess.run(
            argv, cwd=ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        raise BenchError(f"the load on {target} ran past {RUN_TIMEOUT:.0f} s") from None
    if done.returncode != 0:
        raise BenchError(f"the load generator failed on {target}:\n{done.stderr[-2000:]}")
    return LoadResult(**json.loads(done.stdout))


def measure(mode: Mode, target: Target, workers: list[Proc]) -> Run:
    """One load-generator process against one target, and the CPU the servers spent."""
    warmup = max(4 * mode.concurrency, 100)
    argv = [sys.executable, "-m", "bench.parts.loadgen", "--requests", str(mode.requests)]
    argv += ["--concurrency", str(mode.concurrency), "--warmup", str(warmup)]
    argv += ["--stream"] if mode.stream else []
    argv += ["--messages"] if target.messages else []
    procs = [*workers, target.router] if target.router else workers
    with _keyed(target) as urls:
        argv += [arg for url in urls for arg in ("--url", url)]
        before = [proc.cpu_seconds() for proc in procs]
        load = _load(argv, target.name)
    spent = [proc.cpu_seconds() - cpu for proc, cpu in zip(procs, before, strict=True)]
    router_cpu = spent[-1] if target.router else None
    worker_cpu = sum(spent[: len(workers)])
    return Run(mode, target.name, load, warmup + mode.requests, worker_cpu, router_cpu)


def _modes(args: argparse.Namespace) -> list[Mode]:
    return [
        Mode(f"non-stream c{args.concurrency}", False, args.concurrency, args.requests),
        Mode(f"stream c{args.concurrency}", True, args.concurrency, args.stream_requests),
        Mode("non-stream c1", False, 1, args.c1_requests),
    ]


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000, help="non-streamed, measured")
    parser.add_argument("--stream-requests", type=int, default=2000, help="streamed, measured")
    parser.add_argument("--c1-requests", type=int, default=500, help="one at a time")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3, help="figures are medians over rounds")
    parser.add_argument(
        "--policy",
        choices=sorted(PEER_POLICIES),
        default="round_robin",
        help="agent-eval's routing policy; sglang-router runs its nearest one",
    )
    parser.add_argument(
        "--attempt-keys",
        action="store_true",
        help="also measure agent-eval with each request sent under a per-attempt key",
    )
    parser.add_argument(
        "--tokens",
        action="store_true",
        help="also measure keyed requests whose token ids and logprobs the proxy captures "
        "(implies --attempt-keys; the workers then speak vLLM's token fields)",
    )
    parser.add_argument(
        "--processes",
        type=_counts,
        default=[1],
        help="proxy process counts to measure, as 1,2: each past 1 beside the single process",
    )
    parser.add_argument(
        "--cap-cores",
        type=_cores,
        help="hold each agent-eval process to this many cores, and sglang-router to as many "
        "per process of the agent-eval it is measured beside, each in a cgroup of its own "
        "(needs root and a cgroup cpu controller)",
    )
    add_json_option(parser, "proxy")
    return parser.parse_args()


def _counts(text: str) -> list[int]:
    counts = [int(part) for part in text.split(",")]
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError("give process counts of 1 or more, as 1,2")
    return counts


def _cores(text: str) -> float:
    cores = float(text)
    if not 0 < cores <= (os.cpu_count() or 1):
        raise argparse.ArgumentTypeError("give a share of the cores, as 0.3")
    return cores


def _progress(console: Console, round_: int, run: Run) -> None:
    load = run.load
    console.print(
        f"  round {round_}  {run.mode.name:<15} {run.target:<19} {load.rps:8,.0f} req/s"
        f"  p50 {load.p50_ms:7.2f} ms  p99 {load.p99_ms:7.2f} ms  failures {load.failures}",
        highlight=False,
    )


def run_rounds(
    args: argparse.Namespace, console: Console, usage: dict[str, dict[str, float]]
) -> list[list[Run]]:
    """Start the fleet, measure every (mode, target) pair once per round, stop the fleet; with
    a CPU cap, fill `usage` with each cgroup's CPU and throttling."""
    caps = contextlib.closing(CpuCaps(find_controller())) if args.cap_cores else None
    with (
        caps or contextlib.nullcontext() as capped,
        tempfile.TemporaryDirectory(prefix="bench-proxy-") as logs,
    ):
        if capped is not None:  # the load generators and workers: the same weight, no cap
            capped.cap("bench", [os.getpid()], None)
        with Fleet(Path(logs)) as fleet:
            rounds = _rounds(args, console, fleet, capped)
            usage.update(capped.usage() if capped is not None else {})
    return rounds


def _rounds(
    args: argparse.Namespace, console: Console, fleet: Fleet, capped: CpuCaps | None
) -> list[list[Run]]:
    peer = PEER_POLICIES[args.policy]
    console.print(
        f"starting 2 mock workers, agent-eval ({args.policy}) and sglang-router ({peer}) ..."
    )
    keyed = args.attempt_keys or args.tokens
    workers, targets = start_targets(
        fleet, args.policy, keyed, args.tokens, args.processes, capped is not None
    )
    if capped is not None:
        cap_targets(capped, targets, args.cap_cores)
        console.print(_cap_line(args.cap_cores), highlight=False)
    rounds: list[list[Run]] = []
    for round_ in range(1, args.rounds + 1):
        rounds.append([])
        for mode in _modes(args):
            for target in targets:
                rounds[-1].append(measure(mode, target, workers))
                _progress(console, round_, rounds[-1][-1])
    return rounds


def _cap_line(cores: float) -> str:
    return (
        f"CPU cap: each agent-eval process {cores:g} cores; sglang-router {cores:g} cores per "
        f"agent-eval process it stands beside ({PEER} for N=1, {peer_name(2)} for N=2 ...)"
    )


def _usage_line(usage: dict[str, dict[str, float]]) -> str:
    cells = [f"{name} {u['cpu_seconds']:.1f} s, {u['throttled']:.0%}" for name, u in usage.items()]
    return "per cgroup, CPU seconds and throttled periods: " + "; ".join(cells)


def main() -> None:
    args = _parse_args()
    signal.signal(signal.SIGTERM, exit_on_sigterm)
    console = wide_console()
    about = machine()
    usage: dict[str, dict[str, float]] = {}
    try:
        rounds = run_rounds(args, console, usage)
    except BenchError as exc:
        sys.exit(f"error: {exc}")
    except KeyboardInterrupt:
        console.print("interrupted: every process the benchmark started is stopped")
        sys.exit(130)
    runs = combine([run for round_ in rounds for run in round_])
    render(runs, about, console)
    if max(args.processes) > 1:
        console.print(processes_table(runs, args.cap_cores))
    if args.cap_cores:
        console.print(_cap_line(args.cap_cores), highlight=False)
        console.print(_usage_line(usage), highlight=False, soft_wrap=True)
    capped = {"cap_cores": args.cap_cores, "cgroups": usage} if args.cap_cores else {}
    figures = {
        **capped,
        "median": [asdict(run) for run in runs],
        "rounds": [[asdict(run) for run in round_] for round_ in rounds],
    }
    write_results(args, figures, about)


if __name__ == "__main__":
    main()
