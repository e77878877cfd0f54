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
from agent_eval.trigger.checkpoint_server import CheckpointServer
from agent_eval.trigger.checkpoints import Checkpoint, CheckpointFinder

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
    step_dir = plan.config.run_dir / f"step-{checkpoint.step}"
    limit = plan.config.watch.probe_size
    probe = await play(plan, served, scorer, RunDirectory(step_dir / "probe"), observer, limit)
    fired = schedule.trigger.observe(checkpoint.step, _score(probe))
    made = schedule.trigger.last_decision
    assert made is not None, "observe() decides on every probe"
    decision = dataclasses.asdict(made)
    entry: dict[str, Any] = {
        "time": time.time(),
        "checkpoint": str(checkpoint.path),
        "model": served.model,
        "probe": _result(probe),
        **decision,
    }
    if fired:
        full = await play(plan, served, scorer, RunDirectory(step_dir / "full"), observer)
        entry["full"] = _result(full)
    schedule.last_step = checkpoint.step
    await asyncio.to_thread(schedule.record, entry)
    log.info(
        "step %d: probe %.3f, %s", checkpoint.step, _score(probe),
        f"full evaluation ({decision['reason']})" if fired else "no full evaluation",
    )  # fmt: skip


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
    trigger: AdaptiveTrigger
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


def _trigger(settings: WatchSection) -> AdaptiveTrigger:
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
