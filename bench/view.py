"""How fast `agent-eval view` opens and filters a 100,000-attempt run, over HTTP, and its memory.

Writes two synthetic runs (bench.view_index's generator) under a temporary root: a big one
left unfinished (no summary.json: the runs list must index it, the worst case) and a small
finished one. Starts the real server as a user does (`python -m agent_eval view ROOT --port 0`),
times the first runs list, the first rows page (the open, which builds the index), three filters,
a sort, a sample and a record, then reads the server's resident memory from /proc.
Run from the repository root:
`python -m bench.view [--attempts 100000] [--finished] [--json [PATH]]`;
seconds.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from bench.parts.results_file import add_json_option, describe, machine, write_results
from bench.view_index import WORKERS, write_run

OPEN_S, FILTER_S, RSS_MB = 2.0, 1.0, 300.0
"""The issue's limits: open under 2 s, filter under 1 s, server under 300 MB resident."""
URL = re.compile(rb"at (http://\S+/)")


def make_runs(root: Path, attempts: int, finished: bool) -> tuple[str, str]:
    """The big run (unfinished unless `finished`) and a small finished one; their ids."""
    big, small = root / "big", root / "small"
    for run_dir, count in ((big, attempts), (small, 1_000)):
        run_dir.mkdir(parents=True)
        write_run(run_dir, count)
    (small / "summary.json").write_bytes(orjson.dumps({"attempts": 1_000, "scored": 1_000}))
    if finished:
        (big / "summary.json").write_bytes(orjson.dumps({"attempts": attempts}))
    return f"{root.name}/big", f"{root.name}/small"


@contextmanager
def server(root: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """The view served as a user starts it; its process and base URL, read from what it prints."""
    process = subprocess.Popen(
        [sys.executable, "-m", "agent_eval", "view", str(root), "--port", "0"],
        stdout=subprocess.PIPE,
        env={**os.environ, "COLUMNS": "400"},  # one line: the URL is never wrapped
    )
    try:
        assert process.stdout is not None
        found = URL.search(process.stdout.readline())
        if found is None:
            raise RuntimeError("the view printed no URL")
        yield process, found.group(1).decode().rstrip("/")
    finally:
        process.terminate()
        process.wait(10)


def get(base: str, path: str, **params: str) -> tuple[float, Any]:
    """Seconds to fetch and parse one API answer, and the answer."""
    query = f"?{urllib.parse.urlencode(params)}" if params else ""
    start = time.perf_counter()
    with urllib.request.urlopen(base + path + query, timeout=120) as answer:
        data = orjson.loads(answer.read())
    return time.perf_counter() - start, data


def memory_mb(pid: int) -> tuple[float, float]:
    """The process's resident memory now and at its peak (VmRSS, VmHWM), in MB."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return _kilobytes(fields["VmRSS"]) / 1024, _kilobytes(fields["VmHWM"]) / 1024


def _kilobytes(field: str) -> int:
    return int(field.split()[0])


def measure(base: str, big: str) -> list[tuple[str, float, float | None, str]]:
    """(what, seconds, limit, note) for each request, in the order a user makes them."""
    rows = f"/api/runs/{urllib.parse.quote(big)}/rows"
    figures: list[tuple[str, float, float | None, str]] = []
    seconds, runs = get(base, "/api/runs")
    figures.append(("runs list (first)", seconds, OPEN_S, f"{len(runs['runs'])} runs"))
    seconds, page = get(base, rows)
    figures.append(("open: first rows page", seconds, OPEN_S, f"{page['total']} attempts"))
    runs_total = page["total"]
    asks = {
        "filter outcome=wrong": {"outcome": "wrong"},
        "filter timeout + worker": {"outcome": "timeout", "worker": WORKERS[2]},
        "filter q=marbles": {"q": "marbles"},
        "sort latency desc": {"sort": "latency_s", "desc": "1"},
    }
    for name, params in asks.items():
        seconds, page = get(base, rows, **params)
        figures.append((name, seconds, FILTER_S, f"{page['total']} match"))
    sample = page["rows"][0]["sample_id"]
    seconds, found = get(base, f"/api/runs/{urllib.parse.quote(big)}/samples/{sample}")
    figures.append(("one sample", seconds, FILTER_S, f"{len(found['attempts'])} attempts"))
    middle = runs_total // 2
    seconds, _ = get(base, f"/api/runs/{urllib.parse.quote(big)}/records/{middle}")
    figures.append(("one record", seconds, FILTER_S, ""))
    return figures


def report(figures: list[tuple[str, float, float | None, str]], rss: tuple[float, float]) -> None:
    """A plain table: each figure, the issue's limit and the figure as a share of it."""
    print(f"{'measure':<26} {'value':>9} {'limit':>7} {'ratio':>6}  note")
    for name, value, limit, note in figures:
        ratio = f"{value / limit:.2f}" if limit else ""
        print(f"{name:<26} {value:>8.3f}s {limit:>6.1f}s {ratio:>6}  {note}")
    for name, value in zip(("server RSS after", "server peak RSS"), rss, strict=True):
        print(f"{name:<26} {value:>7.0f}MB {RSS_MB:>5.0f}MB {value / RSS_MB:>6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--attempts", type=int, default=100_000)
    parser.add_argument("--finished", action="store_true", help="give the big run summary.json")
    add_json_option(parser, "view")
    args = parser.parse_args()
    about = machine()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "runs"
        big, _small = make_runs(root, args.attempts, args.finished)
        size = (root / "big" / "samples.jsonl").stat().st_size
        state = "finished" if args.finished else "unfinished"
        print(f"{describe(about)}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
        print(f"big run: {args.attempts} attempts, {size / 1e6:.1f} MB, {state}")
        with server(root) as (process, base):
            figures = measure(base, big)
            rss = memory_mb(process.pid)
            report(figures, rss)
    requests = [
        {"measure": name, "seconds": value, "limit_s": limit, "note": note}
        for name, value, limit, note in figures
    ]
    stored = {
        "big_run": {"attempts": args.attempts, "mb": size / 1e6, "finished": args.finished},
        "requests": requests,
        "server_rss_mb": {"after": rss[0], "peak": rss[1], "limit": RSS_MB},
    }
    write_results(args, stored, about)


if __name__ == "__main__":
    main()
