"""A running run's side of control: its gate, a cancel, its errored attempts played again."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path

from agent_eval.data import Item
from agent_eval.results.files import RunDirectory
from agent_eval.results.record import AttemptRecord
from agent_eval.run.control.channel import listening
from agent_eval.run.control.fleet import Fleet
from agent_eval.run.control.protocol import ControlError, Reply, Request, RunState
from agent_eval.run.control.shard import Pair, ShardSide, items_of
from agent_eval.run.engine import Engine

_TOLD = {
    "resume": "resumed",
    "cancel": "cancelled: attempts in flight end unrecorded; the run stops",
}


class RunControl:
    """A running run's side of control: each request acted on at once, on the event loop."""

    def __init__(
        self,
        engine: Engine,
        run_dir: RunDirectory,
        items: Callable[[], Iterable[Item]],
        fleet: Fleet | None = None,
    ) -> None:
        """`items`: the run's items afresh, to find the requeued ones in; `fleet`: the
        engine shards each action goes to, on a run of several (the engine only counts)."""
        self.engine, self.run_dir, self.items, self.fleet = engine, run_dir, items, fleet
        self._awaited: set[Pair] = set()
        if fleet is not None:
            engine.on_record = self._arrived
            engine.progress.gate = fleet  # the live view shows the run's shards together
        self._requeuing = asyncio.Lock()
        self._side = ShardSide(engine, items, run_dir)
        """The requeued attempts' plays, on one engine process."""
        self._requeued = 0
        self._closed = False

    async def state(self) -> RunState:
        """The run now, as `status` answers it: the in flight of every shard added up."""
        progress, fleet = self.engine.progress, self.fleet
        gate = self.engine.gate.state
        in_flight, limit, paused, requeued = gate.in_flight, gate.limit, gate.paused, self._requeued
        if fleet is not None:
            shards = await fleet.order("status")
            in_flight, paused = sum(s.in_flight for s in shards), fleet.paused
            limit = fleet.limit
            requeued = len(self._awaited)
        return RunState(
            in_flight=in_flight, limit=limit, paused=paused, stopping=self.engine.stopping,
            done=progress.done, total=progress.total, requeued=requeued,
        )  # fmt: skip

    async def handle(self, request: Request) -> Reply:
        """Act on `request`; what was done, or why not. Raises: ControlError."""
        action = request.action
        if action == "status":
            message = "status"
        elif action == "requeue":
            message = await self._requeue()
        elif self.engine.stopping:
            raise ControlError("the run is stopping: no attempt starts any more")
        elif self.fleet is not None:
            message = await self._forward(request, self.fleet)
        else:
            message = self._gate(request)
        self._tell_view()
        return Reply(ok=True, message=message, state=await self.state())

    async def drain(self) -> None:
        """Take no more requeues; wait for the requeued attempts still playing."""
        async with self._requeuing:
            self._closed = True
        await self._side.wait()

    async def stop(self) -> None:
        """End the requeued plays still going (the run ends on an error or a signal)."""
        await self._side.stop()

    def _gate(self, request: Request) -> str:
        engine, gate = self.engine, self.engine.gate
        if request.action == "pause":
            gate.pause()
            return _paused(gate.state.in_flight)
        if request.action == "resume":
            gate.resume()
            return _TOLD["resume"]
        if request.action == "cancel":
            engine.cancel()
            return _TOLD["cancel"]
        limit = _new_limit(request)
        gate.resize(limit)
        return f"at most {limit} attempts at once"

    async def _forward(self, request: Request, fleet: Fleet) -> str:
        """`request` carried out on every shard of the fleet."""
        action = request.action
        if action == "concurrency":
            limit = _new_limit(request)
            await fleet.resize(limit)
            return f"at most {limit} attempts at once, shared among the engine shards"
        if action == "cancel":
            self.engine.cancel()  # this process's own count stops; the summary says incomplete
        states = await fleet.order(action)
        if action == "pause":
            return _paused(sum(state.in_flight for state in states))
        return _TOLD[action]

    async def _requeue(self) -> str:
        """Take the run's errored attempts out of samples.jsonl and play them again: here, or
        each on one shard of the fleet."""
        fleet = self.fleet
        async with self._requeuing, fleet.lock if fleet is not None else contextlib.nullcontext():
            closed = fleet is not None and (fleet.closed or fleet.give is None)
            if closed or self._closed or self.engine.stopping:
                raise ControlError("the run is starting, finishing or stopping: none is requeued")
            records = await asyncio.to_thread(self.run_dir.set_aside_unscored)
            if not records:
                return "no errored attempts to play again"
            for record in records:
                self.engine.progress.run.remove(record)
            wanted = {(record.sample_id, record.attempt) for record in records}
            if fleet is not None:
                self._awaited |= wanted
                await fleet.requeue(wanted)
            else:
                found = await asyncio.to_thread(items_of, self.items(), {p[0] for p in wanted})
                self._play(found, wanted)
        return f"playing {len(records)} errored attempts again"

    def _arrived(self, record: AttemptRecord) -> None:
        self._awaited.discard((record.sample_id, record.attempt))

    def _play(self, items: list[Item], wanted: set[Pair]) -> None:
        n_samples = self.engine.config.n_samples
        attempts = {(item.id, a) for item in items for a in range(n_samples)}
        # An attempt whose item the run no longer has stays set aside: a resume plays it.
        count = len(attempts & wanted)
        self._requeued += count
        self._side.play(items, attempts - wanted).add_done_callback(self._played(count))

    def _played(self, count: int) -> Callable[[asyncio.Task[None]], None]:
        def done(_: asyncio.Task[None]) -> None:
            self._requeued -= count

        return done

    def _tell_view(self) -> None:
        """Redraw the live view: a pause shows before the next attempt ends."""
        if self.engine.on_progress is not None:
            self.engine.on_progress(self.engine.progress)


def _paused(in_flight: int) -> str:
    return f"paused: no attempt starts; {in_flight} in flight finish"


def _new_limit(request: Request) -> int:
    if request.limit is None:
        raise ControlError("concurrency needs a new limit: a whole number of 1 or more")
    return request.limit


@contextlib.asynccontextmanager
async def controlled(control: RunControl, run_dir: Path) -> AsyncIterator[RunControl]:
    """Take control requests on the run directory's socket while inside; on leaving, wait for
    the requeued attempts (unless leaving on an error)."""
    async with listening(run_dir, control.handle):
        try:
            yield control
            await control.drain()
        finally:
            await control.stop()
