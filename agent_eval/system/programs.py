"""An outside program run to its end: own process group, time and memory limits, bounded output.

Its output is read as it comes and only the tails are kept, so a program that prints gigabytes
neither blocks on a full pipe nor fills the harness's memory. Whatever way the run ends (exit,
time limit, cancellation), the whole process group is stopped before this returns.

The program is started by `subprocess.Popen` without a preexec_fn where setpriv is installed
(system/children.py), so CPython starts it by vfork, and its end is awaited on a pidfd. A start
holds the event loop until the program execs: 0.1 s, against 1.9 s for uvloop's
`create_subprocess_exec` with a preexec_fn in a 400 MB process on a loaded machine, where 200
starts froze the loop for minutes and short programs had ended before their start returned.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from agent_eval.system.children import dying_with_parent, signal_group

TAIL_BYTES = 8192
"""How much of the end of stdout and of stderr is kept."""
GRACE_S = 3.0
"""Seconds between SIGTERM and SIGKILL when a program is stopped."""
_DRAIN_S = 1.0
"""How long the pipes may stay open once the group is gone (a program that left its session)."""


@dataclass(frozen=True)
class Program:
    """What to run: a shell command line or an argv list, where, with what."""

    command: str | Sequence[str]
    cwd: Path
    env: Mapping[str, str]
    timeout_s: float
    stdin: Path | None = None
    """A file to read as stdin; None: stdin is empty."""
    memory_mb: int | None = None


@dataclass(frozen=True)
class Finished:
    """How a program ended: its exit code (None when a signal ended it) and output tails."""

    exit_code: int | None
    signal: str | None
    stdout_tail: str
    stderr_tail: str
    duration_s: float
    timed_out: bool


class Tail:
    """The last `limit` bytes written to it."""

    def __init__(self, limit: int = TAIL_BYTES) -> None:
        self.limit = limit
        self.data = bytearray()

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > self.limit:
            del self.data[: -self.limit]

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


async def run_program(program: Program) -> Finished:
    """Run `program` until it exits or its time is up; its whole group is gone on return.

    Raises:
        OSError: the program could not start (not found, not executable, no such directory).
    """
    started = time.monotonic()
    process = _start(program)
    out, err = Tail(), Tail()
    readers = [
        asyncio.ensure_future(_read_into(process.stdout, out)),
        asyncio.ensure_future(_read_into(process.stderr, err)),
    ]
    try:
        code, timed_out = await _ended(process, program.timeout_s)
    finally:
        await _stop(process)
        await _drain(readers)
    return Finished(
        exit_code=code if code >= 0 else None,
        signal=signal.Signals(-code).name if code < 0 else None,
        stdout_tail=out.text(),
        stderr_tail=err.text(),
        duration_s=round(time.monotonic() - started, 6),
        timed_out=timed_out,
    )


def _start(program: Program) -> subprocess.Popen[bytes]:
    with contextlib.ExitStack() as files:
        stdin: IO[bytes] | int = subprocess.DEVNULL
        if program.stdin is not None:
            stdin = files.enter_context(program.stdin.open("rb"))
        argv, preexec = dying_with_parent(_argv(program))
        return subprocess.Popen(
            argv, cwd=program.cwd, env=dict(program.env), stdin=stdin, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True, preexec_fn=preexec,
        )  # fmt: skip


def _argv(program: Program) -> list[str]:
    """The program's argv, under a shell that sets its memory limit first when it has one.

    The shell's `ulimit -v` (RLIMIT_AS, inherited by the program's own children), not a
    preexec_fn: Python code run between fork and exec in a harness with threads can deadlock.
    """
    command = program.command
    argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
    if program.memory_mb is None:
        return argv
    limit = 'ulimit -v "$0" && exec "$@"'
    return ["/bin/sh", "-c", limit, str(program.memory_mb * 1024), *argv]


async def _ended(process: subprocess.Popen[bytes], timeout_s: float) -> tuple[int, bool]:
    """The program's exit code once it ends, and False; or once its time is up, after it was
    stopped, and True."""
    try:
        async with asyncio.timeout(timeout_s):
            return await _exit_code(process), False
    except TimeoutError:
        await _stop(process)
        return await _exit_code(process), True


async def _exit_code(process: subprocess.Popen[bytes]) -> int:
    """Wait, without blocking the loop, for the process to end; reap it."""
    if process.returncode is not None:
        return process.returncode
    loop = asyncio.get_running_loop()
    pidfd = os.pidfd_open(process.pid)
    try:
        ended: asyncio.Future[None] = loop.create_future()
        loop.add_reader(pidfd, _settle, ended)
        try:
            await ended
        finally:
            loop.remove_reader(pidfd)
    finally:
        os.close(pidfd)
    return process.wait()  # it has ended: this only reaps it


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the whole group, SIGKILL it after GRACE_S, reap the leader; shielded, so a
    cancellation cannot leave the group running."""
    await asyncio.shield(_stop_group(process))


async def _stop_group(process: subprocess.Popen[bytes]) -> None:
    try:
        if process.returncode is None:
            signal_group(process.pid, signal.SIGTERM)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(GRACE_S):
                    await _exit_code(process)
    finally:
        # Whole group, every time: a child's own children must not outlive it.
        signal_group(process.pid, signal.SIGKILL)
        await _exit_code(process)


async def _read_into(pipe: IO[bytes] | None, tail: Tail) -> None:
    if pipe is None:
        return
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    try:
        while chunk := await reader.read(65536):
            tail.add(chunk)
    finally:
        transport.close()


async def _drain(tasks: Sequence[asyncio.Future[None]]) -> None:
    """Let the readers take what is left in the pipes, then stop them."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(
            asyncio.shield(asyncio.gather(*tasks, return_exceptions=True)), _DRAIN_S
        )
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
