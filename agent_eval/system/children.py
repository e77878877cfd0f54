"""Child processes that never outlive the harness: own process group, killed with their parent."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Sequence

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Runs in the child before exec: if the harness is killed outright, the child goes too."""
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
