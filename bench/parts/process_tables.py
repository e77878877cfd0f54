"""The proxy on several processes beside one and sglang-router, as ratios."""

from __future__ import annotations

from rich import box
from rich.table import Table

from bench.parts.tables import Run, number, ratio

SINGLE, PEER = "agent-eval", "sglang-router"


def group_name(count: int) -> str:
    """The target name of agent-eval on `count` processes."""
    return f"agent-eval N={count}"


def peer_name(shares: int) -> str:
    """The target name of sglang-router capped at `shares` proxy processes' CPU."""
    return PEER if shares == 1 else f"{PEER} {shares}x"


def processes_table(runs: list[Run], cap: float | None = None) -> Table:
    """Per loaded mode and process count: req/s and its ratios, then the same per process and
    per proxy CPU second (what each process gets done, whatever the cores left to it). With a
    `cap` each proxy process had that many cores, and sglang-router N times as many."""
    limit = (
        "at the machine's cores, req/s cannot grow with N"
        if cap is None
        else "under the cap, each process gets the same CPU whatever N"
    )
    capped = "" if cap is None else f", each capped at {cap:g} cores; sglang-router at N x {cap:g}"
    table = Table(
        box=box.SIMPLE_HEAD,
        title=f"agent-eval on N processes (one port, SO_REUSEPORT{capped})",
        caption="per process: req/s ÷ N ÷ the single process's; per CPU s: req per proxy "
        "CPU second ÷ the single process's; proxy cores: its processes' CPU ÷ time; cores "
        f"busy: load generator, workers and proxy together ({limit})",
    )
    for name in (
        "mode",
        "N",
        "req/s",
        "÷ 1 process",
        "÷ sglang",
        "per process",
        "per CPU s",
        "proxy cores",
        "cores busy",
    ):
        table.add_column(name, justify="left" if name == "mode" else "right")
    for mode in dict.fromkeys(run.mode for run in runs if run.mode.concurrency > 1):
        by_target = {run.target: run for run in runs if run.mode == mode}
        single = _rps(by_target.get(SINGLE))
        single_cpu = _per_cpu(by_target[SINGLE]) if SINGLE in by_target else None
        for count in _counts(by_target):
            run = by_target[group_name(count) if count > 1 else SINGLE]
            table.add_row(
                mode.name,
                str(count),
                number(run.load.rps),
                ratio(run.load.rps, single),
                ratio(run.load.rps, _rps(by_target.get(peer_name(count), by_target.get(PEER)))),
                ratio(run.load.rps / count, single),
                ratio(_per_cpu(run), single_cpu),
                number(_proxy_cores(run)),
                number(run.cores_busy()),
            )
        table.rows[-1].end_section = True
    return table


def _counts(by_target: dict[str, Run]) -> list[int]:
    counts = [1] if SINGLE in by_target else []
    prefix = group_name(0)[:-1]
    return counts + sorted(int(t.removeprefix(prefix)) for t in by_target if t.startswith(prefix))


def _proxy_cores(run: Run) -> float | None:
    """Cores the proxy's processes kept busy together (N x the cap when the cap holds them)."""
    us = run.cpu_us(run.router_cpu)
    return None if us is None else us * run.load.rps / 1e6


def _rps(run: Run | None) -> float | None:
    return None if run is None else run.load.rps


def _per_cpu(run: Run) -> float | None:
    """Requests sent per CPU second of the proxy's processes."""
    if not run.router_cpu:
        return None
    return run.sent / run.router_cpu
