"""An outside program run to its end: own process group, time and memory limits, bounded output.

Its output is read as it comes and only the tails are kept, so a program that prints gigabytes
neither blocks on a full pipe nor fills the harness's memory. Whatever way the run ends (exit,
time limit, cancellation), the whole process group is stopped before this returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_eval.system.children import die_with_parent, stop_groups

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
    stdin: bytes | None = None
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
    process = await _start(program)
    out, err = Tail(), Tail()
    readers = [_read_into(process.stdout, out), _read_into(process.stderr, err)]
    tasks = [asyncio.ensure_future(reader) for reader in readers]
    tasks.append(asyncio.ensure_future(_feed(process, program.stdin)))
    timed_out = False
    try:
        async with asyncio.timeout(program.timeout_s):
            await process.wait()
    except TimeoutError:
        timed_out = True
    finally:
        await stop_groups([process], GRACE_S)
        await _drain(tasks)
    code = process.returncode
    return Finished(
        exit_code=code if code is not None and code >= 0 else None,
        signal=signal.Signals(-code).name if code is not None and code < 0 else None,
        stdout_tail=out.text(),
        stderr_tail=err.text(),
        duration_s=round(time.monotonic() - started, 6),
        timed_out=timed_out,
    )


async def _start(program: Program) -> asyncio.subprocess.Process:
    pipe = asyncio.subprocess.PIPE
    stdin = pipe if program.stdin is not None else asyncio.subprocess.DEVNULL
    command = program.command
    argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
    return await asyncio.create_subprocess_exec(
        *argv, cwd=program.cwd, env=dict(program.env), stdin=stdin, stdout=pipe, stderr=pipe,
        start_new_session=True, preexec_fn=_limits(program.memory_mb),
    )  # fmt: skip


def _limits(memory_mb: int | None) -> Callable[[], None]:
    """What runs in the child before exec: die with the harness, and the address-space limit,
    which its own children inherit."""

    def apply() -> None:
        die_with_parent()
        if memory_mb is not None:
            limit = memory_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


async def _read_into(stream: asyncio.StreamReader | None, tail: Tail) -> None:
    if stream is None:
        return
    while chunk := await stream.read(65536):
        tail.add(chunk)


async def _feed(process: asyncio.subprocess.Process, data: bytes | None) -> None:
    """Write `data` to the program's stdin and close it; a program that does not read it is
    not an error."""
    if data is None or process.stdin is None:
        return
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        process.stdin.write(data)
        await process.stdin.drain()
        process.stdin.close()


async def _drain(tasks: Sequence[asyncio.Future[None]]) -> None:
    """Let the readers take what is left in the pipes, then stop them."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(
            asyncio.shield(asyncio.gather(*tasks, return_exceptions=True)), _DRAIN_S
        )
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
