"""Run every (sample, attempt) through a runner, score it, and stream the results to disk."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import math
import random
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from openai import AsyncOpenAI

from agent_eval.agents.base import AgentRunner, RunContext, Sampling
from agent_eval.agents.trajectory import Trajectory, TrajectoryError
from agent_eval.data import Item, Sample, Session
from agent_eval.failures import FailureClass
from agent_eval.metrics import AttemptCounts, Summary, is_tool_error
from agent_eval.metrics.attempt import Attempt
from agent_eval.proxy.attempt_client import OpenedAttempt
from agent_eval.results.files import RunDirectory
from agent_eval.results.record import AttemptRecord
from agent_eval.results.summary import build_summary, measured_rates, write_summary
from agent_eval.rewards import RewardScorer
from agent_eval.run.capture import AttemptKeys, KeyUnavailable
from agent_eval.run.concurrency.driver import TRACE_FILE, start_adapting
from agent_eval.run.gate import Gate, GateView
from agent_eval.run.limits import AttemptWatch, LimitExceeded, Limits, Waited, watch_calls
from agent_eval.run.scoring import Scored, checked, score_attempt
from agent_eval.seeds import SeedScope
from agent_eval.wire import SESSION_HEADER


@dataclass(frozen=True)
class EngineConfig:
    """How many attempts, how many at once, and what every attempt shares.

    No defaults here: the run config (`run.parts.engine_config`) is their one source.
    """

    model: str
    n_samples: int
    concurrency: int
    adaptive: bool
    """Whether the controller of run.concurrency moves the limit, `concurrency` its ceiling."""
    seed: int
    attempt_timeout: float
    replays: int
    replay_backoff: float
    max_unscored: float
    sampling: Sampling
    ks: tuple[int, ...]
    seed_scope: SeedScope
    """What `seed` fixes on the run's backend, for summary.json to say."""
    run_dir: Path | None
    """Where runners may keep what an attempt leaves for debugging; None: nowhere."""
    limits: Limits
    """What one attempt may spend (eval.limits)."""


@dataclass
class Progress:
    """What the live view shows after each finished attempt: `run` counts every attempt of the
    run, those a resumed run found on disk included, as the summary does; `played` only this
    run's, as its rates do."""

    total: int = 0
    run: AttemptCounts = field(default_factory=AttemptCounts)
    played: AttemptCounts = field(default_factory=AttemptCounts)
    gate: GateView | None = None
    """The engine's gate (or its shards' together), live: whether the run is paused, and its
    limit."""

    @property
    def done(self) -> int:
        """Attempts of the run finished so far, kept ones included."""
        return self.run.attempts

    def add(self, attempt: Attempt) -> None:
        """Count an attempt finished in this run."""
        self.run.add(attempt)
        self.played.add(attempt)


def kept_attempts(run_dir: RunDirectory) -> tuple[set[tuple[str, int]], AttemptCounts]:
    """The (sample id, attempt) pairs a run directory holds, and their counts: where a resumed
    run starts. Reads the whole file: call it off the event loop."""
    done: set[tuple[str, int]] = set()
    kept = AttemptCounts()
    for record in run_dir.records():
        done.add((record.sample_id, record.attempt))
        kept.add(record)
    return done, kept


class RecordSink(Protocol):
    """Where finished attempts go: the run directory, or the pipe to the parent process."""

    async def append(self, record: AttemptRecord) -> None: ...


def attempt_seed(run_seed: int, sample_id: str, attempt: int) -> int:
    """A per-attempt seed that depends only on the run seed, the sample and the attempt."""
    digest = hashlib.blake2b(f"{run_seed}:{sample_id}:{attempt}".encode(), digest_size=4)
    return int.from_bytes(digest.digest(), "big")


class Engine:
    """Bounded concurrency over a stream of attempts; memory stays flat with run size."""

    def __init__(
        self,
        runner: AgentRunner,
        scorer: RewardScorer,
        client: AsyncOpenAI,
        config: EngineConfig,
        on_progress: Callable[[Progress], None] | None = None,
        keys: AttemptKeys | None = None,
    ) -> None:
        """`keys`: the proxy's per-attempt keys, for the runners that use them."""
        self.runner, self.scorer, self.client, self.config = runner, scorer, client, config
        self.on_progress = on_progress
        self.keys = keys if keys is not None and keys.wanted(runner) else None
        if config.limits:
            watch_calls(client)
        self.progress = Progress()
        self._budget: int | None = None
        # Shared by every play() at once (a Ray shard given a lost shard's attempts too):
        # eval.concurrency bounds the engine, not each call.
        self.gate = Gate(config.concurrency)
        self._plays = 0
        self._adapter: asyncio.Task[None] | None = None
        self._in_flight: set[asyncio.Task[None]] = set()
        self.cancelled = False
        """Set by cancel(): the run stops, the attempts in flight unrecorded."""
        self.on_record: Callable[[AttemptRecord], None] | None = None
        """Told of each record counted (control follows the requeued attempts by it)."""

    @property
    def stopping(self) -> bool:
        """Whether no attempt is started any more: more ended unscored than eval.max_unscored
        allows, or the run was cancelled."""
        return self.gate.closed

    def cancel(self) -> None:
        """Start no attempt; end those in flight unrecorded (a resume plays them again)."""
        self.cancelled = True
        self.gate.close()
        for task in self._in_flight:
            task.cancel()

    async def run(
        self, items: Iterable[Item], run_dir: RunDirectory, total: int | None = None
    ) -> Summary:
        """Play every attempt not already in `run_dir`, then summarise the whole directory."""
        started = time.monotonic()
        done = await self.start(run_dir, total)
        await self.play(items, done, run_dir)
        return await self.finish(run_dir, time.monotonic() - started)

    async def start(self, run_dir: RunDirectory, total: int | None) -> set[tuple[str, int]]:
        """Ready the run directory; the (sample id, attempt) pairs it already holds, counted."""
        await asyncio.to_thread(run_dir.prepare)
        done, kept = await asyncio.to_thread(kept_attempts, run_dir)
        total_attempts = (total or 0) * self.config.n_samples
        self.progress = Progress(total=total_attempts, run=kept, gate=self.gate)
        if self.progress.total:
            # The budget is of the whole run: attempts unscored before a resume count too.
            self._budget = math.floor(self.config.max_unscored * self.progress.total)
        return done

    async def play(
        self,
        items: Iterable[Item],
        done: set[tuple[str, int]] | frozenset[tuple[str, int]],
        sink: RecordSink,
    ) -> None:
        """Play the attempts of `items` not in `done`, each record to `sink` as it finishes."""
        pending = (pair for pair in self._attempts(items) if (pair[0].id, pair[1]) not in done)
        # A task group: if one attempt fails (or the run is cancelled), the others stop too.
        # An attempt is pulled, and its task made, only once the gate gives it a slot: memory
        # stays flat, and a lazy `items` is read no sooner than an attempt can start.
        async with self._adapting(), asyncio.TaskGroup() as group:
            while await self.gate.acquire():
                pair = next(pending, None)
                if pair is None:
                    self.gate.release()
                    return
                task = group.create_task(self._work(*pair, sink))
                self._in_flight.add(task)
                task.add_done_callback(self._in_flight.discard)

    async def finish(self, run_dir: RunDirectory, wall_time: float) -> Summary:
        """Summarise every attempt in `run_dir` and write summary.json."""
        summary = await asyncio.to_thread(self._summarize, run_dir, wall_time)
        await asyncio.to_thread(write_summary, run_dir, summary)
        return summary

    def count(self, record: AttemptRecord) -> None:
        """Add one finished attempt to the progress, and tell the live view."""
        progress = self.progress
        progress.add(record)
        if self.on_record is not None:
            self.on_record(record)
        budget = self._budget
        unscored = progress.run.unscored
        if not record.scored and budget is not None and sum(unscored.values()) > budget:
            self.gate.close()
        if self.on_progress is not None:
            self.on_progress(progress)

    @contextlib.asynccontextmanager
    async def _adapting(self) -> AsyncIterator[None]:
        """In adaptive mode, the controller resizes the gate while any play() runs."""
        self._plays += 1
        if self.config.adaptive and self._adapter is None:
            trace = None if self.config.run_dir is None else self.config.run_dir / TRACE_FILE
            client, ceiling = self.client, self.config.concurrency
            base_url = str(client.base_url)
            self._adapter = start_adapting(self.gate, base_url, client.api_key, ceiling, trace)
        try:
            yield
        finally:
            self._plays -= 1
            if not self._plays and self._adapter is not None:
                self._adapter.cancel()
                await asyncio.gather(self._adapter, return_exceptions=True)
                self._adapter = None

    def _attempts(self, items: Iterable[Item]) -> Iterator[tuple[Item, int]]:
        for item in items:
            for attempt in range(self.config.n_samples):
                yield item, attempt

    async def _work(self, item: Item, attempt: int, sink: RecordSink) -> None:
        """One attempt in the slot the gate gave it, its record to `sink` and counted."""
        # The slot is given back only once the attempt is counted: one over eval.max_unscored
        # closes the gate before another attempt can take the slot.
        try:
            record = await self._attempt(item, attempt)
            await sink.append(record)
            self.count(record)
        finally:
            self.gate.release()

    async def _attempt(self, item: Item, attempt: int) -> AttemptRecord:
        seed = attempt_seed(self.config.seed, item.id, attempt)
        replayed: list[dict[str, Any]] = []
        for replay in range(self.config.replays + 1):
            # A replay gets its own session: the proxy need not send it to the same worker.
            session_id = f"{item.id}-{attempt}" + (f"-replay{replay}" if replay else "")
            trajectory, latency = await self._play(item, session_id, seed)
            error = trajectory.error
            if error is None or replay == self.config.replays or error.whose is FailureClass.MODEL:
                break
            replayed.append({**error.to_dict(), "session_id": session_id, "latency_s": latency})
            await asyncio.sleep(replay_delay(replay, self.config.replay_backoff))
        trajectory.replays = replayed
        scored = await self._score(item, trajectory)
        return attempt_record(item, attempt, seed, session_id, trajectory, scored, latency)

    async def _score(self, item: Item, trajectory: Trajectory) -> Scored:
        """The attempt scored; a scorer's failure is its error when it has none of its own."""
        scored = await self._reward(item, trajectory)
        if scored.failure is not None and trajectory.error is None:
            trajectory.error = scored.failure
        return scored

    async def _reward(self, item: Item, trajectory: Trajectory) -> Scored:
        """The check command's verdict when the runner ran one, else the reward's, again while the
        scorer itself fails (its pool restarts), as often as an attempt may be replayed."""
        program = trajectory.program
        if program is not None and program.check is not None:
            return checked(asdict(program.check), trajectory.final_output)
        outputs = trajectory.final_output, trajectory.turn_outputs
        for _ in range(self.config.replays + 1):
            scored = await score_attempt(self.scorer, item, *outputs)
            if scored.failure is None:
                return scored
        return scored

    async def _play(self, item: Item, session_id: str, seed: int) -> tuple[Trajectory, float]:
        """One play of an attempt: its trajectory, stopped where it failed, and its seconds;
        with a key of its own when the runner uses them, its calls as the proxy recorded them."""
        if (keys := self.keys) is None:
            trajectory, seconds = await self._run(item, self._context(session_id, seed, None))
            return self._within_limits(trajectory), seconds
        try:
            async with keys.play(session_id) as keyed:
                ctx = self._context(session_id, seed, keyed.opened)
                played = await self._run(item, ctx, functools.partial(keys.waited, keyed.opened))
        except KeyUnavailable as exc:
            return stopped(Trajectory(), TrajectoryError("connection_error", str(exc))), 0.0
        return self._within_limits(keyed.trajectory(played[0])), played[1]

    def _context(self, session_id: str, seed: int, opened: OpenedAttempt | None) -> RunContext:
        config = self.config
        client = self.client.with_options(default_headers={SESSION_HEADER: session_id})
        ctx = RunContext(
            client, config.model, session_id, seed, config.sampling,
            time_limit=config.attempt_timeout, run_dir=config.run_dir,
        )  # fmt: skip
        if opened is not None:
            # opened.base_url: with the proxy on several processes, the one holding the record.
            ctx.client = client.with_options(api_key=opened.key, base_url=opened.base_url)
            ctx.base_url, ctx.api_key = opened.base_url, opened.key
            ctx.attempt_base_url = opened.attempt_base_url
        return ctx

    async def _run(
        self, item: Item, ctx: RunContext, waited: Waited | None = None
    ) -> tuple[Trajectory, float]:
        """The runner's play in `ctx`, stopped where it failed or passed a limit, and its
        seconds; `waited`: where the proxy's record says how long its calls waited."""
        started = time.monotonic()
        watch = AttemptWatch(self.config.limits, ctx.trajectory, waited)
        try:
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation that
            # arrives as the attempt ends, and the run would go on after Ctrl-C.
            async with asyncio.timeout(self.config.attempt_timeout), watch.enforcing():
                trajectory = await self.runner.run(item, ctx)
        except LimitExceeded as exc:
            trajectory = stopped(ctx.trajectory, exc.error)
        except TimeoutError:
            message = f"the attempt took longer than {self.config.attempt_timeout:g} s"
            trajectory = stopped(ctx.trajectory, TrajectoryError("timeout", message))
        except Exception as exc:  # a runner's bug is recorded on its attempt; the run goes on
            message = f"{type(exc).__name__}: {exc}"
            trajectory = stopped(ctx.trajectory, TrajectoryError("runner_error", message))
        return trajectory, round(time.monotonic() - started, 6)

    def _within_limits(self, trajectory: Trajectory) -> Trajectory:
        """The trajectory, failed of limit_exceeded when its calls went past a limit (the last
        one may, before anything could stop it) and it has no error of its own."""
        limits = self.config.limits
        if trajectory.error is None and (name := limits.spending_over(trajectory, False)):
            return stopped(trajectory, limits.exceeded(name, trajectory))
        return trajectory

    def _summarize(self, run_dir: RunDirectory, wall_time: float) -> Summary:
        # Rates are of the attempts played in this wall time: a resumed run did not play
        # those it found on disk, and the live view counts the same way.
        rates = measured_rates(self.progress.played, wall_time)
        scores = (record.score() for record in run_dir.records())
        complete, seed = not self.stopping, self.config.seed_scope
        return build_summary(scores, self.config.ks, rates, complete, seed)


def replay_delay(replay: int, base: float) -> float:
    """Seconds before replay `replay + 1`: exponential, with full jitter, at most a minute."""
    # Jitter spreads the attempts a worker outage stopped together, so they do not return
    # together and meet the recovering worker all at once.
    return random.uniform(0, min(60.0, base * 2**replay))


def stopped(trajectory: Trajectory, error: TrajectoryError) -> Trajectory:
    """An attempt that did not finish: what the runner recorded up to there, and why it stopped."""
    trajectory.error = error
    trajectory.final_output = None
    return trajectory


def attempt_record(
    item: Item,
    attempt: int,
    seed: int,
    session_id: str,
    trajectory: Trajectory,
    scored: Scored,
    latency: float,
) -> AttemptRecord:
    """One finished attempt, scored: what samples.jsonl keeps of it."""
    recorded = trajectory.to_dict()
    return AttemptRecord(
        sample_id=item.id,
        attempt=attempt,
        seed=seed,
        session_id=session_id,
        **scored.fields(),
        challenge_turns=_challenge_turns(item),
        latency_s=round(latency, 6),
        prompt_tokens=trajectory.prompt_tokens,
        completion_tokens=trajectory.completion_tokens,
        model_calls=len(trajectory.model_calls),
        tool_calls=len(trajectory.tool_calls),
        tool_errors=sum(is_tool_error(call.result) for call in trajectory.tool_calls),
        error=recorded["error"],
        trajectory=recorded,
        variant_of=item.variant_of if isinstance(item, Sample) else None,
        perturbation=item.perturbation if isinstance(item, Sample) else None,
    )


def _challenge_turns(item: Item) -> list[int] | None:
    """A session's challenge turns; None for a sample."""
    if not isinstance(item, Session):
        return None
    return [index for index, turn in enumerate(item.turns) if turn.challenge]
