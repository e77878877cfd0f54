"""The parent's side: start the engine processes, play its own share, append what they send,
and forward control to them over their stdin."""

from __future__ import annotations

import asyncio
import sys
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path

from agent_eval.data import Item
from agent_eval.errors import AgentEvalError
from agent_eval.results.files import RunDirectory
from agent_eval.results.record import AttemptRecord
from agent_eval.run.control.fleet import Fleet, LocalLink, Requeue
from agent_eval.run.control.shard import News, Order, Pair, ShardSide, ShardState
from agent_eval.run.engine import Engine
from agent_eval.run.shards.job import MAX_LINE, NEWS, ShardJob, shard_of
from agent_eval.system.children import dying_with_parent, stop_groups
from agent_eval.system.credentials import child_environment
from agent_eval.system.diagnostics import log_tail, open_to_append

STOP_GRACE = 10.0


class EngineProcessError(AgentEvalError):
    """An engine process ended before its share was played."""


class ProcessLink:
    """An engine process as a shard of the fleet: orders down its stdin, news up its stdout."""

    def __init__(self, process: asyncio.subprocess.Process, fleet: Fleet, limit: int) -> None:
        self.process, self._fleet = process, fleet
        self._state = ShardState(in_flight=0, limit=limit, paused=False, busy=True)
        self._replies: deque[asyncio.Future[ShardState]] = deque()
        self._open = True

    @property
    def state(self) -> ShardState:
        return self._state

    async def order(self, order: Order) -> ShardState:
        """Send `order`; the process's state after (as last heard, once it has ended)."""
        stdin = self.process.stdin
        if not self._open or stdin is None or stdin.is_closing():
            return self._state
        reply = asyncio.get_running_loop().create_future()
        self._replies.append(reply)
        try:
            stdin.write(order.model_dump_json().encode() + b"\n")
            await stdin.drain()
        except ConnectionError:
            self.ended()
        return await reply

    def heard(self, line: bytes) -> None:
        """A news line from the process: a reply to the oldest order, or its fall to idle."""
        news = News.model_validate_json(line[len(NEWS) :])
        self._state = news.state
        if news.reply and self._replies:
            self._replies.popleft().set_result(news.state)
        else:
            self._fleet.changed()

    def close(self) -> None:
        """No more orders: the process finishes what it plays and exits."""
        stdin = self.process.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()

    def ended(self) -> None:
        """The process is gone: orders still waiting get its last state; it plays nothing."""
        self._open = False
        self._state = self._state.model_copy(update={"busy": False, "in_flight": 0})
        while self._replies:
            reply = self._replies.popleft()
            if not reply.done():
                reply.set_result(self._state)
        self._fleet.changed()


async def play_in_processes(
    engine: Engine,
    own: Iterable[Item],
    done: set[tuple[str, int]],
    jobs: list[ShardJob],
    run_dir: RunDirectory,
    api_key: str,
    fleet: Fleet,
    items: Callable[[], Iterable[Item]],
) -> None:
    """Play `own` here and each job in its own process; every record lands in `run_dir`.

    Control acts on every process through `fleet` until each is idle; `items`: this process's
    share afresh, for the attempts requeued to it."""
    logs = [run_dir.path / f"engine-{job.index}.log" for job in jobs]
    processes: list[asyncio.subprocess.Process] = []
    side = ShardSide(engine, items, run_dir, lambda _: fleet.changed())
    links: list[ProcessLink] = []
    try:
        await fleet.join(LocalLink(side))
        for job, log in zip(jobs, logs, strict=True):
            processes.append(await _spawn(job, log, api_key))
            links.append(ProcessLink(processes[-1], fleet, engine.config.concurrency))
            await fleet.join(links[-1])
        fleet.give = _by_shard(fleet)
        async with asyncio.TaskGroup() as group:
            group.create_task(_own(side, own, done))
            group.create_task(_close_when_idle(fleet, links, engine))
            for job, link, log in zip(jobs, links, logs, strict=True):
                group.create_task(_collect(link, job.index, log, engine, run_dir))
        await side.wait()
    finally:
        await side.stop()
        await stop_groups(processes, STOP_GRACE)


async def _own(side: ShardSide, own: Iterable[Item], done: set[Pair]) -> None:
    await side.play(own, done)


async def _close_when_idle(fleet: Fleet, links: list[ProcessLink], engine: Engine) -> None:
    """Once every shard is idle (or the run stops), end each process's orders."""
    await fleet.keep_open(lambda: fleet.all_idle() or engine.stopping)
    for link in links:
        link.close()


def _by_shard(fleet: Fleet) -> Requeue:
    """Requeued attempts, each to the process its sample hashes to (as its first play)."""

    async def give(wanted: set[Pair]) -> None:
        parts: list[list[Pair]] = [[] for _ in fleet.links]
        for pair in sorted(wanted):
            parts[shard_of(pair[0], len(parts))].append(pair)
        orders = (
            link.order(Order(action="requeue", attempts=part))
            for link, part in zip(fleet.links, parts, strict=True)
            if part
        )
        await asyncio.gather(*orders)

    return give


async def _spawn(job: ShardJob, log: Path, api_key: str) -> asyncio.subprocess.Process:
    env = child_environment({"api_key": api_key})
    argv, preexec = dying_with_parent([sys.executable, "-m", "agent_eval.run.shards.child"])
    with open_to_append(log) as log_file:
        process = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=log_file,
            env=env, start_new_session=True, preexec_fn=preexec, limit=MAX_LINE,
        )  # fmt: skip
    assert process.stdin is not None
    # The job is the first line; control orders follow until the parent closes stdin.
    process.stdin.write(job.model_dump_json().encode() + b"\n")
    await process.stdin.drain()
    return process


async def _collect(
    link: ProcessLink,
    index: int,
    log: Path,
    engine: Engine,
    run_dir: RunDirectory,
) -> None:
    """Append each record line the process sends, hand its news to `link`; raises when it
    stops short."""
    process = link.process
    assert process.stdout is not None
    try:
        while line := await process.stdout.readline():
            if not line.endswith(b"\n"):
                break  # a process killed mid-write: the attempt is played again on resume
            if line.startswith(NEWS):
                link.heard(line)
                continue
            record = AttemptRecord.from_line(line, f"engine process {index}'s output")
            # The line as the process wrote it: parsed to be counted, not written a second time.
            await run_dir.append_line(line)
            engine.count(record)
            if engine.stopping:
                # Over the unscored budget, or cancelled: no process starts another attempt.
                # Those in flight are lost with it and played on resume.
                await stop_groups([process], STOP_GRACE)
                return
    finally:
        link.ended()
    code = await process.wait()
    if code != 0:
        raise EngineProcessError(
            f"engine process {index} exited with code {code} before its share was played; "
            f"its log ({log}) ends with:\n{log_tail(log)}\n"
            f"Finished attempts are kept: `agent-eval run --resume {run_dir.path}` plays the rest."
        )
