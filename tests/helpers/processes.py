"""What a test reads of live processes and servers: alive, answering, listening, resident."""

from __future__ import annotations

import os
from pathlib import Path

import aiohttp


def alive(pid: int) -> bool:
    """Whether a process with this pid runs: one that has exited but is not yet reaped (a
    zombie, whose new parent may reap it late) does not."""
    try:
        os.kill(pid, 0)
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (ProcessLookupError, FileNotFoundError):
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def described(pid: int) -> str:
    """A process's state, parent and command, for a failure message (the parent killed, the
    child still running: which signal did it miss?)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except FileNotFoundError:
        return f"process {pid} has gone"
    return f"process {pid} still runs: state {fields[0]}, parent {fields[1]}, {command}"


async def answers(url: str, path: str = "/health") -> bool:
    """Whether a server answers 200 on `path`; False when nothing listens."""
    try:
        async with aiohttp.ClientSession() as http, http.get(url + path) as response:
            return response.status == 200
    except aiohttp.ClientError:
        return False


def listener_pid(base_url: str) -> int | None:
    """The pid of the process listening on the server's port, found through /proc."""
    return min(listener_pids(base_url), default=None)


def listener_pids(base_url: str) -> set[int]:
    """The pids of every process listening on the server's port (several share it with
    SO_REUSEPORT), found through /proc."""
    port = int(base_url.rsplit(":", 1)[1].split("/")[0])
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
                inodes.add(fields[9])
    pids = set()
    for fd in Path("/proc").glob("[0-9]*/fd/*"):
        try:
            target = fd.readlink().name
        except OSError:
            continue
        if target.startswith("socket:[") and target[8:-1] in inodes:
            pids.add(int(fd.parts[2]))
    return pids


def rss_mb(pid: int) -> float:
    """The resident memory of a process, in MB (2^20 bytes), read from /proc."""
    status = Path(f"/proc/{pid}/status").read_text()
    line = next(line for line in status.splitlines() if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def running_with(argument: str, cwd: Path | None = None) -> list[int]:
    """Pids of processes with this command-line argument, read from /proc; with `cwd`, only
    those working there (a test's own, not those of a test running beside it)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if argument.encode() in cmdline.read_bytes().split(b"\0") and (
                cwd is None or (cmdline.parent / "cwd").readlink() == cwd
            ):
                found.append(int(cmdline.parent.name))
        except OSError:
            continue
    return found


def descendants(pid: int) -> set[int]:
    """Pids of a process's children, theirs, and so on, read from /proc."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # The command name in parentheses may hold spaces: the fields after it are plain.
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found
