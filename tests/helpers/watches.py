"""A watch directory as `agent-eval watch` leaves it: its schedule, decisions and step runs."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from agent_eval.metrics import accuracy
from agent_eval.metrics.summary import json_ready
from agent_eval.run.config import RunConfig, WatchSection
from agent_eval.run.serving import Served
from agent_eval.trigger.bounded import BoundedTrigger
from agent_eval.trigger.watch import Schedule
from tests.helpers.view_runs import record, write_run

Score = tuple[int, int]  # correct, attempts


def result(score: Score) -> dict[str, Any]:
    """A probe's or full evaluation's result as `agent-eval watch` records it."""
    return {"accuracy": json_ready(dataclasses.asdict(accuracy(*score))), "attempts": score[1]}


def schedule(watch: Path) -> Schedule:
    """The watcher's schedule, carried on from trigger.json: a move of 0.1 in the probe fires."""
    watch.mkdir(parents=True, exist_ok=True)
    return Schedule.load(watch, WatchSection(trigger="threshold", threshold=0.1, alpha=1.0))


def checkpoint(plan: Schedule, step: int, probe: Score, full: Score) -> bool:
    """Probe a step as the watcher does: its probe run, the full run when the trigger fires,
    then the decision's line; True when it fired."""
    step_dir = plan.root / f"step-{step}"
    write_run(step_dir / "probe", [record("s1", 0, True), record("s2", 0, False)])
    fired = plan.trigger.observe(step, probe[0] / probe[1])
    made = plan.trigger.last_decision
    assert made is not None
    entry: dict[str, Any] = {
        "time": time.time(),
        "checkpoint": f"/checkpoints/step-{step}",
        "model": f"step-{step}",
        "probe": result(probe),
        **dataclasses.asdict(made),
    }
    if fired:
        write_run(step_dir / "full", [record(f"s{i}", 0, i % 2 == 0) for i in range(5)])
        entry["full"] = result(full)
    plan.last_step = step
    plan.record(entry)
    return fired


def three_steps(watch: Path) -> None:
    """Step 100 fires (first), 200 fires (the probe moved 0.4), 300 does not (it stayed)."""
    plan = schedule(watch)
    fired = [
        checkpoint(plan, 100, (5, 10), (12, 20)),
        checkpoint(plan, 200, (9, 10), (16, 20)),
        checkpoint(plan, 300, (9, 10), (0, 20)),
    ]
    assert fired == [True, True, False]


def age(*paths: Path) -> None:
    """Make files look long untouched: nothing written to them for a minute."""
    past = time.time() - 60
    for path in paths:
        os.utime(path, (past, past))


def written(watch: Path) -> list[Path]:
    """What a watch writes as it goes: its decisions and its step runs' samples."""
    return [watch / "decisions.jsonl", *watch.glob("step-*/*/samples.jsonl")]


def bounded_steps(watch: Path) -> list[dict[str, Any]]:
    """A watch with the bounded trigger on 40 samples: step 100 is the first evaluation (20
    right), each later step is a check (every 100 steps) finding a better model, evaluated: 30
    right at 200, 36 at 300, 38 at 400; from 300 on the decisions carry a forecast."""
    watch.mkdir(parents=True, exist_ok=True)
    plan = Schedule.load(watch, WatchSection(probe_size=10, check_size=40, max_delay_steps=100))
    trigger = plan.trigger
    assert isinstance(trigger, BoundedTrigger)
    entries = []
    for step, right in ((100, 20), (200, 30), (300, 36), (400, 38)):
        outcomes = {f"s{i}": float(i < right) for i in range(40)}
        probe = trigger.probe(step)
        for sample in probe.order:
            if probe.add(sample, outcomes[sample]):
                break
        decided = dataclasses.asdict(trigger.decide(probe))
        entry: dict[str, Any] = {"time": time.time(), "checkpoint": f"/ckpt/step-{step}",
                                 "model": f"step-{step}", **decided}  # fmt: skip
        if probe.order:
            played = probe.order[: probe.played]
            write_run(
                watch / f"step-{step}/probe", [record(s, 0, outcomes[s] == 1) for s in played]
            )
            entry["probe"] = result((int(sum(outcomes[s] for s in played)), len(played)))
        if entry["fired"]:
            write_run(
                watch / f"step-{step}/full", [record(s, 0, o == 1) for s, o in outcomes.items()]
            )
            entry["full"] = result((right, 40))
            trigger.evaluated(step, outcomes)
        forecast = trigger.forecast([step + 10 * k for k in range(1, 11)])
        entry["forecast"] = None if forecast is None else dataclasses.asdict(forecast)
        plan.last_step = step
        plan.record(entry)
        entries.append(entry)
    return entries


def decisions(watch_dir: Path) -> list[dict[str, Any]]:
    """The decisions.jsonl lines a watch has written so far."""
    path = watch_dir / "decisions.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def fake_serving(
    served: Served, starts: list[Path]
) -> Callable[..., contextlib.AbstractAsyncContextManager[Served]]:
    """Stands in for `serving`: the running mocks and proxy; `starts` records each launch."""

    @contextlib.asynccontextmanager
    async def serving(config: RunConfig, _: Callable[[str], None]) -> AsyncIterator[Served]:
        starts.append(Path(config.model.path or ""))
        yield served

    return serving
