"""`agent-eval watch`: a probe on each new checkpoint, a full evaluation when the trigger fires.

Everything lands in the watch directory: `decisions.jsonl` (one line per checkpoint: probe
score, change, fired or not and why, the full result), `trigger.json` (the schedule, so a
restarted watcher carries on), and `step-N/probe`, `step-N/full` run directories.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import math
import time
from pathlib import Path
from typing import Any

from agent_eval.metrics import Summary
from agent_eval.results.files import DECISIONS, TRIGGER_STATE, RunDirectory
from agent_eval.rewards import RewardScorer
from agent_eval.run.config import WatchSection, save_run_config
from agent_eval.run.evaluation import Plan, RunObserver, play, resolved_config
from agent_eval.run.parts import warm_scorer
from agent_eval.run.serving import Served
from agent_eval.trigger.adaptive import AdaptiveTrigger, probe_threshold
from agent_eval.trigger.bounded import BoundedSettings, BoundedTrigger
from agent_eval.trigger.checkpoint_server import CheckpointServer
from agent_eval.trigger.checkpoints import Checkpoint, CheckpointFinder
from agent_eval.trigger.probing import carry_over, play_probe, sample_outcomes

log = logging.getLogger(__name__)


async def watch(plan: Plan, checkpoints: Path, observer: RunObserver) -> int:
    """Handle checkpoints as they appear until `watch.stop_after` or cancellation; how many."""
    config = plan.config
    root = config.run_dir
    finder = CheckpointFinder(checkpoints, config.watch.settle_seconds)
    await asyncio.to_thread(save_run_config, resolved_config(config), config.run_dir)
    schedule = Schedule.load(root, config.watch)
    handled = 0
    async with (
        warm_scorer(config) as scorer,
        CheckpointServer(config, observer.waiting, observer.set_proxy) as server,
    ):
        while config.watch.stop_after is None or handled < config.watch.stop_after:
            found = await asyncio.to_thread(finder.poll)
            for checkpoint in found:
                if checkpoint.step <= schedule.last_step:
                    log.info("skipping %s: step %d is not after %d", checkpoint.path,
                             checkpoint.step, schedule.last_step)  # fmt: skip
                    continue
                served = await server.load(checkpoint.path)
                await _handle(plan, checkpoint, served, scorer, schedule, observer)
                handled += 1
                if handled == config.watch.stop_after:
                    break
            if not found:
                observer.waiting(f"waiting for a new checkpoint in {checkpoints}")
                await asyncio.sleep(config.watch.poll_interval)
    return handled


async def _handle(
    plan: Plan,
    checkpoint: Checkpoint,
    served: Served,
    scorer: RewardScorer,
    schedule: Schedule,
    observer: RunObserver,
) -> None:
    """Probe one checkpoint, ask the trigger, evaluate in full if it fires; log the decision."""
    step, trigger = checkpoint.step, schedule.trigger
    step_dir = plan.config.run_dir / f"step-{step}"
    entry: dict[str, Any] = {"time": time.time(), "checkpoint": str(checkpoint.path),
                             "model": served.model}  # fmt: skip
    played = _Played(plan, served, scorer, observer)
    entry.update(await played.probe(trigger, step, RunDirectory(step_dir / "probe")))
    if entry["fired"]:
        full_dir = RunDirectory(step_dir / "full")
        # The probe's attempts are this checkpoint's on its samples: the full evaluation keeps
        # them and plays the rest, so a long check that fires costs little more.
        kept = await asyncio.to_thread(carry_over, RunDirectory(step_dir / "probe"), full_dir)
        log.info("step %d: the full evaluation keeps the probe's %d attempts", step, kept)
        entry["full"] = _result(await play(plan, served, scorer, full_dir, observer))
        if isinstance(trigger, BoundedTrigger):
            trigger.evaluated(step, await asyncio.to_thread(sample_outcomes, full_dir))
    if isinstance(trigger, BoundedTrigger):
        entry["forecast"] = _forecast(trigger, step)
    schedule.last_step = step
    await asyncio.to_thread(schedule.record, entry)
    how = f"full evaluation ({entry['reason']})" if entry["fired"] else "no full evaluation"
    log.info("step %d: %s", step, how)


@dataclasses.dataclass(frozen=True)
class _Played:
    """What a probe is played with."""

    plan: Plan
    served: Served
    scorer: RewardScorer
    observer: RunObserver

    async def probe(
        self, trigger: AdaptiveTrigger | BoundedTrigger, step: int, run_dir: RunDirectory
    ) -> dict[str, Any]:
        """Play the trigger's probe on the checkpoint of `step`: its result and the decision."""
        parts = (self.plan, self.served, self.scorer, run_dir, self.observer)
        if isinstance(trigger, BoundedTrigger):
            probe = trigger.probe(step)
            # The first checkpoint needs no probe: nothing to compare it with yet.
            played = await play_probe(*parts, probe) if probe.order else None
            decided = dataclasses.asdict(trigger.decide(probe))
            return {**({"probe": _result(played)} if played else {}), **decided}
        summary = await play(*parts, self.plan.config.watch.probe_size)
        trigger.observe(step, _score(summary))
        assert trigger.last_decision is not None, "observe() decides on every probe"
        return {"probe": _result(summary), **dataclasses.asdict(trigger.last_decision)}


def _forecast(trigger: BoundedTrigger, step: int) -> dict[str, Any] | None:
    """The learning curve's forecast over the next max_delay_steps, for the page and report."""
    horizon = trigger.settings.max_delay_steps
    ahead = trigger.forecast([step + horizon * k // 10 for k in range(1, 11)])
    return None if ahead is None else dataclasses.asdict(ahead)


def _score(summary: Summary) -> float | None:
    value = summary.accuracy.value
    return None if math.isnan(value) else value


def _result(summary: Summary) -> dict[str, Any]:
    accuracy = summary.to_dict()["quality"]["accuracy"]
    return {"accuracy": accuracy, "attempts": summary.attempts}


@dataclasses.dataclass
class Schedule:
    """The trigger and the last step handled, kept in the watch directory across restarts."""

    root: Path
    trigger: AdaptiveTrigger | BoundedTrigger
    last_step: int = -1

    @classmethod
    def load(cls, root: Path, settings: WatchSection) -> Schedule:
        schedule = cls(root, _trigger(settings))
        saved = root / TRIGGER_STATE
        if saved.exists():
            state = json.loads(saved.read_text())
            schedule.trigger.load_state_dict(state["trigger"])
            schedule.last_step = state["last_step"]
        return schedule

    def record(self, entry: dict[str, Any]) -> None:
        """Append the decision, then save the schedule (atomically) that follows from it."""
        with (self.root / DECISIONS).open("a") as handle:
            handle.write(json.dumps(entry, allow_nan=False) + "\n")
        state = {"trigger": self.trigger.state_dict(), "last_step": self.last_step}
        RunDirectory(self.root).write_json(TRIGGER_STATE, state)


def _trigger(settings: WatchSection) -> AdaptiveTrigger | BoundedTrigger:
    if settings.trigger == "bounded":
        return BoundedTrigger(
            BoundedSettings(
                delta=settings.delta,
                max_delay_steps=settings.max_delay_steps,
                alpha=settings.error_rate,
                probe_size=min(settings.probe_size, settings.check_size),
                check_size=settings.check_size,
                jitter=settings.jitter,
            )
        )
    # Without a threshold, use the probe's noise at p = 0.5, the largest it can be.
    threshold = settings.threshold or probe_threshold(
        0.5, settings.probe_size, alpha=settings.alpha
    )
    return AdaptiveTrigger(
        threshold,
        alpha=settings.alpha,
        max_steps=settings.max_steps,
        max_seconds=settings.max_seconds,
        min_gap_steps=settings.min_gap_steps,
    )
