"""Child processes that never outlive the harness: own process group, killed with their parent."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import functools
import os
import shutil
import signal
import sys
from collections.abc import Callable, Sequence

_PR_SET_PDEATHSIG = 1


def dying_with_parent(argv: Sequence[str]) -> tuple[list[str], Callable[[], None] | None]:
    """`argv` to start, and the preexec_fn to start it with, so that if the harness is killed
    outright the child goes too: under util-linux's setpriv, which sets the parent-death signal
    and execs, where it is installed; else by a preexec_fn that sets it.

    setpriv first because a preexec_fn makes every start fork the whole harness and run Python
    in the child (uvloop then blocks the event loop until exec: 1.9 s a start in a 400 MB
    process on a loaded machine), and Python between fork and exec can deadlock on a lock
    another thread held.
    """
    setpriv = _setpriv()
    if setpriv is None:
        return list(argv), _die_with_parent
    return [setpriv, "--pdeathsig", "TERM", *argv], None


@functools.cache
def _setpriv() -> str | None:
    return shutil.which("setpriv") if sys.platform.startswith("linux") else None


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def signal_group(pid: int, signum: signal.Signals) -> None:
    """Signal a child's whole process group; a group already gone is not an error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)


async def stop_groups(processes: Sequence[asyncio.subprocess.Process], grace: float) -> bool:
    """SIGTERM each running child's group, SIGKILL every group after `grace` s, reap them all.

    Returns False when some child had to be killed (it did not stop within `grace`).
    """
    running = [p for p in processes if p.returncode is None]
    stopped = True
    try:
        for process in running:
            signal_group(process.pid, signal.SIGTERM)
        await asyncio.wait_for(asyncio.gather(*(p.wait() for p in running)), timeout=grace)
    except (TimeoutError, asyncio.CancelledError):
        stopped = False
    finally:
        # Whole groups, every time: a child's own children must not outlive it.
        for process in processes:
            signal_group(process.pid, signal.SIGKILL)
        for process in running:
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                await asyncio.shield(process.wait())
    return stopped
