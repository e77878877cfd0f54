"""Playing the bounded trigger's probe on a checkpoint: its samples in its order, each sample's
outcome fed to the comparisons as its attempts land, stopping as soon as the probe may."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterator

from agent_eval.data import Item
from agent_eval.metrics import Summary
from agent_eval.results.files import SAMPLES, RunDirectory
from agent_eval.results.record import AttemptRecord
from agent_eval.rewards import RewardScorer
from agent_eval.run.evaluation import Plan, RunObserver, Selection, play
from agent_eval.run.serving import Served
from agent_eval.trigger.probe import Probe


class Outcomes:
    """Each sample's mean correctness over its scored attempts, told to the probe in the
    probe's own order once all of the sample's attempts are in.

    In order, not as they finish: attempts that finish sooner may be the wrong ones, and the
    test's guarantee holds for samples taken in an order drawn before any outcome. A sample
    whose attempts all failed for want of a worker is passed over: it says nothing of the
    model."""

    def __init__(self, probe: Probe, attempts: int) -> None:
        self._probe = probe
        self._attempts = attempts
        self._seen: defaultdict[str, list[bool | None]] = defaultdict(list)
        self._ready: dict[str, float | None] = {}
        self._next = 0  # the position in the probe's order told next

    def take(self, record: AttemptRecord) -> None:
        seen = self._seen[record.sample_id]
        seen.append(record.correct if record.scored else None)
        if len(seen) == self._attempts:
            scored = [bool(c) for c in seen if c is not None]
            self._ready[record.sample_id] = sum(scored) / len(scored) if scored else None
            self._tell()

    def _tell(self) -> None:
        order = self._probe.order
        while self._next < len(order) and order[self._next] in self._ready:
            outcome = self._ready.pop(order[self._next])
            self._next += 1
            if outcome is not None and not self._probe.finished:
                self._probe.add(order[self._next - 1], outcome)


class ProbeSink:
    """The run directory, and the probe told of each record as it lands."""

    def __init__(self, run_dir: RunDirectory, outcomes: Outcomes) -> None:
        self._run_dir = run_dir
        self._outcomes = outcomes

    async def append(self, record: AttemptRecord) -> None:
        await self._run_dir.append(record)
        self._outcomes.take(record)


async def play_probe(
    plan: Plan,
    served: Served,
    scorer: RewardScorer,
    run_dir: RunDirectory,
    observer: RunObserver,
    probe: Probe,
) -> Summary:
    """Play the probe's samples until it may stop; the attempts of a probe cut short by a
    restart count again first."""
    by_id = {item.id: item for item in plan.items()}
    outcomes = Outcomes(probe, plan.config.eval.n_samples)
    for record in await asyncio.to_thread(_kept, run_dir, set(probe.order)):
        outcomes.take(record)

    def pending() -> Iterator[Item]:
        for sample_id in probe.order:
            if probe.finished:
                return
            yield by_id[sample_id]

    selection = Selection(pending(), len(probe.order), lambda d: ProbeSink(d, outcomes))
    return await play(plan, served, scorer, run_dir, observer, selection=selection)


def carry_over(probe_dir: RunDirectory, full_dir: RunDirectory) -> int:
    """Begin a full evaluation with its probe's scored attempts, unless it has begun: the same
    checkpoint played the same samples already. How many attempts it took."""
    if full_dir.samples.exists() or not probe_dir.samples.exists():
        return 0
    kept = [record.to_line() for record in probe_dir.records() if record.scored]
    full_dir.create()
    full_dir.write_chunks(SAMPLES, kept)
    return len(kept)


def sample_outcomes(run_dir: RunDirectory) -> dict[str, float]:
    """Each sample's mean correctness over its scored attempts in `run_dir`."""
    right: defaultdict[str, list[bool]] = defaultdict(list)
    for record in run_dir.records():
        if record.scored:
            right[record.sample_id].append(bool(record.correct))
    return {sample: sum(found) / len(found) for sample, found in right.items()}


def _kept(run_dir: RunDirectory, wanted: set[str]) -> list[AttemptRecord]:
    if not run_dir.samples.exists():
        return []
    return [record for record in run_dir.records() if record.sample_id in wanted]
