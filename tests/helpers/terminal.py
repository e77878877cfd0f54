"""A command on a real terminal (tmux, 120x40), its screens sampled while it runs."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import re
import shlex
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pytest

EXITED = re.compile(r"^(\^C)?EXIT=\d+", re.MULTILINE)
"""The shell's line once the command ended; after Ctrl-C, on the line the terminal echoed ^C on."""
WORKER_ROW = re.compile(r"^\s*http://127\.0\.0\.1:\d+\s+healthy\s+\w+\s+(\d+)\s+(\d+)\s+(\d+)\s*$")


@dataclass(frozen=True)
class Screen:
    """A command on a terminal: the screens sampled while it went on, and what stayed afterwards."""

    frames: list[str]
    final: str  # the scrollback and the screen once the command ended


class OnTerminal(Protocol):
    """Run a command on a terminal of its own to its exit `code`; Ctrl-C once `ctrl_c_when`."""

    def __call__(
        self,
        command: list[str],
        cwd: Path,
        *,
        ctrl_c_when: Callable[[str], bool] | None = None,
        code: int = 0,
    ) -> Awaitable[Screen]: ...


async def tmux(socket: str, *args: str) -> str:
    """One tmux command on our own server; its stdout."""
    process = await asyncio.create_subprocess_exec(
        "tmux", "-L", socket, "-f", "/dev/null", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return out.decode()


@contextlib.asynccontextmanager
async def terminal(socket: str) -> AsyncIterator[OnTerminal]:
    """`await run(command, cwd)`: each command on a 120x40 tmux terminal of its own, to its exit.

    With `ctrl_c_when`, Ctrl-C is typed at the first frame it holds for: as a user types it, the
    terminal signals every process in its foreground group. Inside, a tmux server of its own on
    `socket`; skipped where there is no tmux.
    """
    if shutil.which("tmux") is None:
        if os.environ.get("AGENT_EVAL_REQUIRE_TMUX"):
            pytest.fail("tmux is required here (AGENT_EVAL_REQUIRE_TMUX) but not installed")
        pytest.skip("tmux is not installed")
    sessions = itertools.count()

    async def run(
        command: list[str],
        cwd: Path,
        *,
        ctrl_c_when: Callable[[str], bool] | None = None,
        code: int = 0,
    ) -> Screen:
        # The pane's shell may export the size it saw before tmux sized the pane: not a user's.
        # Its trap keeps it alive to say the exit code: a command that exits 130 at once on
        # Ctrl-C can be reaped before the shell takes its own SIGINT, which then ended it with
        # no EXIT line (as an interactive shell, the user's, never does). The command resets
        # the trap to the default, and a death by SIGINT reads EXIT=130 with its traceback.
        started = f"env -u COLUMNS -u LINES {shlex.join(command)}"
        shell = f"trap : INT; {started}; echo EXIT=$?; sleep 300"
        name = f"run{next(sessions)}"
        # The pane stays to read once its shell has gone.
        await tmux(socket, "new-session", "-d", "-s", name, "-x", "120", "-y", "40",
                   "-c", str(cwd), shell,
                   ";", "set-option", "-t", name, "remain-on-exit", "on")  # fmt: skip
        frames: list[str] = []
        async with asyncio.timeout(120):
            while not frames or EXITED.search(frames[-1]) is None:
                if await tmux(socket, "display-message", "-p", "-t", name, "#{pane_dead}") == "1\n":
                    break
                frames.append(await tmux(socket, "capture-pane", "-p", "-t", name))
                if ctrl_c_when is not None and ctrl_c_when(frames[-1]):
                    await tmux(socket, "send-keys", "-t", name, "C-c")
                    ctrl_c_when = None
                await asyncio.sleep(0.1)
        final = await tmux(socket, "capture-pane", "-p", "-S", "-", "-t", name)
        assert f"EXIT={code}" in final, final
        return Screen(frames, final)

    try:
        yield run
    finally:
        killed = await asyncio.create_subprocess_exec(
            "tmux", "-L", socket, "kill-server",
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        await killed.wait()


def worker_rows(frame: str) -> list[tuple[int, int]]:
    """(in flight, served) of each worker row in the panel of a frame."""
    found = (WORKER_ROW.match(line) for line in frame.splitlines())
    return [(int(m.group(1)), int(m.group(2))) for m in found if m]
