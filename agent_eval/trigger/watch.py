"""`agent-eval watch`: a probe on each new checkpoint, a full evaluation when the trigger fires.

Everything lands in the watch directory: `decisions.jsonl` (one line per checkpoint: probe
score, change, fired or not and why, the full result), `trigger.json` (the schedule, so a
restarted watcher carries on), and `step-N/probe`, `step-N/full` run directories.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import math
import time
from pathlib import Path
from typing import Any

import aiohttp

from agent_eval.config import RunConfig, WatchSection, save_run_config
from agent_eval.evaluation import Plan, RunObserver, play, resolved_config, warm_scorer
from agent_eval.metrics import Summary
from agent_eval.results import RunDirectory
from agent_eval.rewards import RewardScorer
from agent_eval.serving import Served, served_model, serving
from agent_eval.trigger.adaptive import AdaptiveTrigger, probe_threshold
from agent_eval.trigger.checkpoints import Checkpoint, CheckpointFinder

log = logging.getLogger(__name__)

DECISIONS = "decisions.jsonl"
STATE = "trigger.json"
# Backends whose servers swap in new weights without a restart.
RELOADABLE = {"sglang"}


async def watch(plan: Plan, checkpoints: Path, observer: RunObserver) -> int:
    """Handle checkpoints as they appear until `watch.stop_after` or cancellation; how many."""
    config = plan.config
    root = config.run_dir
    finder = CheckpointFinder(checkpoints, config.watch.settle_seconds)
    await asyncio.to_thread(save_run_config, resolved_config(config), config.run_dir)
    schedule = Schedule.load(root, config.watch)
    handled = 0
    async with warm_scorer(config) as scorer, CheckpointServer(config, observer) as server:
        while config.watch.stop_after is None or handled < config.watch.stop_after:
            found = await asyncio.to_thread(finder.poll)
            for checkpoint in found:
                if checkpoint.step <= schedule.last_step:
                    log.info("skipping %s: step %d is not after %d", checkpoint.path,
                             checkpoint.step, schedule.last_step)  # fmt: skip
                    continue
                served = await server.load(checkpoint)
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
    decision = dataclasses.asdict(schedule.trigger.last_decision)
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
        saved = root / STATE
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
        RunDirectory(self.root).write_json(STATE, state)


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


class CheckpointServer:
    """Workers serving the newest checkpoint: weights swapped in place where the backend can."""

    def __init__(self, config: RunConfig, observer: RunObserver) -> None:
        self.config, self.observer = config, observer
        self.reloadable = config.backend().name in RELOADABLE
        self._stack: contextlib.AsyncExitStack | None = None
        self._served: Served | None = None

    async def __aenter__(self) -> CheckpointServer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._close()

    async def load(self, checkpoint: Checkpoint) -> Served:
        """The workers with this checkpoint's weights, swapped in or restarted."""
        served = self._served
        if served is not None and self.reloadable and await _swap(served, checkpoint.path):
            # SGLang renames its model after a swap: ask again which name requests use.
            model = await served_model(self.config, served.client)
            self._served = dataclasses.replace(served, model=model)
            return self._served
        await self._close()
        self.observer.waiting(f"starting workers on {checkpoint.path.name}")
        config = self.config.model_copy(deep=True)
        config.model.path = str(checkpoint.path)
        self._stack = contextlib.AsyncExitStack()
        self._served = await self._stack.enter_async_context(serving(config, self.observer.waiting))
        self.observer.set_proxy(self._served.base_url, self._served.api_key)
        return self._served

    async def _close(self) -> None:
        stack, self._stack, self._served = self._stack, None, None
        if stack is not None:
            self.observer.set_proxy(None)
            await stack.aclose()


async def _swap(served: Served, path: Path) -> bool:
    """Ask every worker to load `path`; False (and the reason logged) if any could not."""
    body = {"model_path": str(path)}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=1800)) as http:
        for worker in served.workers:
            try:
                async with http.post(worker.url + "/update_weights_from_disk", json=body) as answer:
                    result = await answer.json(content_type=None)
            except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
                log.warning("worker %s could not swap weights (%s); restarting", worker.url, exc)
                return False
            if not result.get("success"):
                log.warning("worker %s refused %s: %s; restarting", worker.url, path,
                            result.get("message"))  # fmt: skip
                return False
    return True
