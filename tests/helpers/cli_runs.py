"""`agent-eval` as a user runs it, in a process of its own: the command, its exit, what it wrote."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path

import orjson

from tests.helpers.proxy import StartWorkers

CLI = [sys.executable, "-m", "agent_eval"]


def served_url_in(line: str) -> str:
    """The proxy's base URL in a line the CLI printed."""
    found = re.search(r"http://127\.0\.0\.1:\d+/v1", line)
    assert found, line
    return found.group(0)


ROWS = 10  # "Say i": right on even i (the answer is i), wrong on odd i (the answer is i + 1)


def write_dataset(path: Path) -> Path:
    """A dataset of ROWS questions the mock worker answers, half of them rightly."""
    rows = [
        {"question": f"Say {i}", "answer": f"#### {i if i % 2 == 0 else i + 1}"}
        for i in range(ROWS)
    ]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


async def agent_eval(*args: str, cwd: Path) -> asyncio.subprocess.Process:
    """`agent-eval ARGS` started in a process of its own, its output piped."""
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agent_eval", *args, cwd=cwd,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


async def finish(process: asyncio.subprocess.Process, timeout: float = 120) -> tuple[int, str, str]:
    """Wait for a started command: its exit code, stdout and stderr."""
    out, err = await asyncio.wait_for(process.communicate(), timeout)
    assert process.returncode is not None  # communicate() returns once the process has ended
    return process.returncode, out.decode(), err.decode()


async def slow_run(start_workers: StartWorkers, tmp_path: Path) -> tuple[str, ...]:
    """`run`'s arguments for the shipped-style dataset over two mock workers slow enough
    (0.3 s a call) that a test can step in mid-run."""
    workers = await start_workers(2)
    for worker in workers:
        worker.behavior.latency = 0.3
    data = write_dataset(tmp_path / "say.jsonl")
    endpoints = [arg for w in workers for arg in ("--endpoint", w.url)]
    return ("--dataset", str(data), *endpoints, "-n", "2", "-j", "2")


def summary(run_dir: Path) -> dict:
    """A run's summary.json."""
    return json.loads((run_dir / "summary.json").read_text())


def lines(run_dir: Path) -> list[dict]:
    """A run's samples.jsonl, one dict per attempt."""
    return [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
