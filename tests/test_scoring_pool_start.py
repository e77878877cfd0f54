"""A scoring pool whose start breaks because a process multiprocessing needs (the resource
tracker, the fork server) died or could not run: the start is an error of ours, never a bare
BrokenPipeError (click ends a command on one with a silent exit 1), and the next start succeeds."""

from __future__ import annotations

import re
import subprocess
import sys

# In a fresh interpreter: the resource tracker and the fork server start with the first pool.
SCRIPT = """
import asyncio, multiprocessing.spawn, sys
from agent_eval.rewards import RewardPoolError, RewardScorer

async def main():
    scorer = RewardScorer(max_workers=1)
    multiprocessing.spawn.set_executable("/nonexistent/python")  # its helpers cannot run
    try:
        await scorer.start()
    except RewardPoolError as exc:
        print("first start:", exc)
    multiprocessing.spawn.set_executable(sys.executable)
    print("then scored:", (await scorer.score("4", "4")).status)
    await scorer.close()

asyncio.run(main())
"""


def test_a_start_broken_by_a_dead_helper_process_is_told_and_the_next_start_scores() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    first, then = done.stdout.splitlines()
    # Which pipe breaks first depends on when the child that could not run has closed its end.
    assert re.match(
        r"first start: the scoring pool failed to start: a process it needs \(the fork server "
        r"or the resource tracker\) died or could not run \((BrokenPipeError|EOFError|"
        r"ConnectionRefusedError): ",
        first,
    ), first
    assert then == "then scored: ok"
    assert "the scoring pool's start broke (" in done.stderr
