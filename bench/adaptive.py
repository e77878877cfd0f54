"""Full evaluations on a fixed interval (as AReaL schedules them: its Evaluator fires every
`evaluator.freq_steps`), by today's adaptive trigger and by the delay-bounded trigger, on
simulated training runs.

A run is 2,000 training steps with a checkpoint every 10 (bench/parts/training_runs.py: five
scenarios, items of spread difficulty, every attempt a fresh draw). A real change: the trend
(the true accuracy less each checkpoint's own jitter) has moved at least DELTA since the last
full evaluation; its delay is the steps until the next full evaluation; a move that is over
(back within DELTA) before one is an excursion, not a change; one still waiting when the run
ends counts its wait so far, and is missed if that is the interval or more. The same counted on
the checkpoints' own accuracy, jitter and all, is shown beside it: there a one-checkpoint
swing past DELTA is a change if the next evaluation happens to land on it and an excursion if
not, so it rewards where a schedule's evaluations fall (evaluating every 50 steps comes out
later than every 200 in the noisy runs). A false alarm: an evaluation a change fired while the
true accuracy had moved less than DELTA/2. Items played counts every attempt, probes and full
evaluations (which keep their probe's attempts, as the watch does), against the fixed
interval's. A wrong verdict: a comparison that said "better" or "worse" against the sign of
the true difference, or ruled out a change of DELTA that was there.

Goals (issue: adaptive evaluation with guarantees): the bounded trigger's worst delay within
the fixed interval it replaces (INTERVAL steps: the most a change waits when evaluating every
INTERVAL steps), on either count, in every scenario, with at least 60% fewer full
evaluations. Beside the verdict: where its worst delay, within that bound, is longer than the
fixed interval's own worst in the same runs (a climb too slow to build to DELTA between two
evaluations every INTERVAL steps never waits there at all). Run from the repository root:
`python -m bench.adaptive [--seed 100] [--runs 50] [--scenario NAME] [--jobs 2] [--json [PATH]]`.
"""

from __future__ import annotations

import argparse
import functools
import statistics
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agent_eval.trigger import AdaptiveTrigger, probe_threshold
from agent_eval.trigger.bounded import BoundedSettings, BoundedTrigger
from agent_eval.trigger.probe import Probe
from bench.parts.results_file import add_json_option, machine, write_results
from bench.parts.training_runs import (
    EVERY,
    ITEMS,
    SCENARIOS,
    SPREAD,
    STEPS,
    TrainingRun,
    simulate,
)

DELTA = 0.1
INTERVAL = 100  # the fixed interval the bounded trigger replaces
FIXED = (50, INTERVAL, 200)
PROBE_ITEMS = 50  # today's trigger: the same first 50 items at every checkpoint
GOAL = 0.60
COUNTS = (("delay_worst_steps", "trend"), ("jittered_delay_worst_steps", "jitter"))
AHEAD = (10, 50)  # steps ahead the forecasts are scored at


@dataclass
class Schedule:
    """What one schedule did on one run."""

    evals: dict[int, float] = field(default_factory=dict)  # step -> its full evaluation's score
    on_change: set[int] = field(default_factory=set)
    verdicts: int = 0
    wrong_verdicts: int = 0
    # |forecast - true| and |last full evaluation's score - true|, by steps ahead
    forecast_errors: dict[int, list[float]] = field(default_factory=dict)
    persistence_errors: dict[int, list[float]] = field(default_factory=dict)


def fixed(run: TrainingRun, interval: int) -> Schedule:
    """A full evaluation every `interval` steps from step 0."""
    schedule = Schedule()
    for index, step in enumerate(run.steps):
        if step % interval == 0:
            schedule.evals[step] = _full(run, index).mean()
    return schedule


def today(run: TrainingRun) -> Schedule:
    """Today's trigger (defaults: smoothing 0.2, 3 noise deviations, a 500-step window)."""
    trigger = AdaptiveTrigger(probe_threshold(0.5, PROBE_ITEMS), max_steps=500, min_gap_steps=30)
    probe_items = np.arange(PROBE_ITEMS)
    schedule = Schedule()
    for index, step in enumerate(run.steps):
        probed = run.outcomes(index, probe_items)
        if trigger.observe(step, float(probed.mean())):
            kept = {int(i): float(o) for i, o in zip(probe_items, probed, strict=True)}
            schedule.evals[step] = _full(run, index, kept).mean()
            decision = trigger.last_decision
            if decision is not None and decision.reason == "change":
                schedule.on_change.add(step)
    return schedule


def bounded(run: TrainingRun) -> Schedule:
    """The delay-bounded trigger: paired sequential probes, a check before INTERVAL passes."""
    trigger = BoundedTrigger(BoundedSettings(delta=DELTA, max_delay_steps=INTERVAL))
    schedule = Schedule()
    for index, step in enumerate(run.steps):
        probe = trigger.probe(step)
        played = _play(run, index, probe)
        decision = trigger.decide(probe)
        _judge(run, index, schedule, decision.comparisons, decision.reason == "cleared")
        if decision.fired:
            outcomes = _full(run, index, played)
            schedule.evals[step] = outcomes.mean()
            trigger.evaluated(step, {str(i): float(o) for i, o in enumerate(outcomes)})
            if decision.reason == "change":
                schedule.on_change.add(step)
            _forecast_errors(run, index, trigger, schedule)
    return schedule


def _forecast_errors(
    run: TrainingRun, index: int, trigger: BoundedTrigger, schedule: Schedule
) -> None:
    """After a full evaluation: the forecast's error AHEAD steps on, beside persistence's."""
    ahead = [k for k in AHEAD if index + k // EVERY < len(run.steps)]
    forecast = trigger.forecast([run.steps[index] + k for k in ahead])
    if forecast is None:
        return
    score = schedule.evals[run.steps[index]]
    for k, predicted in zip(ahead, forecast.mean, strict=True):
        true = run.true[index + k // EVERY]
        schedule.forecast_errors.setdefault(k, []).append(abs(predicted - true))
        schedule.persistence_errors.setdefault(k, []).append(abs(score - true))


def _play(run: TrainingRun, index: int, probe: Probe) -> dict[int, float]:
    """Attempts one at a time, in the probe's order, until it may stop; the outcomes played."""
    items = np.array([int(i) for i in probe.order], dtype=int)
    drawn = run.outcomes(index, items)
    played: dict[int, float] = {}
    for item, outcome in zip(items, drawn, strict=True):
        played[int(item)] = float(outcome)
        if probe.add(str(item), float(outcome)):
            break
    run.played -= len(items) - len(played)
    return played


def _judge(
    run: TrainingRun, index: int, schedule: Schedule, comparisons: dict[str, Any], cleared: bool
) -> None:
    """Count the verdicts that contradict the truth: the true accuracy against the realised
    score of the evaluation compared with (the last one, the first, or the best)."""
    scores = list(schedule.evals.values())
    baselines = {
        "reference": scores[-1] if scores else None,
        "baseline": scores[0] if scores else None,
        "best": max(scores, default=None),
    }
    for name, comparison in comparisons.items():
        baseline = baselines[name]
        assert baseline is not None
        truth = float(run.true[index] - baseline)  # a numpy scalar would make the counts numpy's
        verdict = comparison["verdict"]
        wrong = (verdict == "better" and truth <= 0) or (verdict == "worse" and truth >= 0)
        wrong |= name == "reference" and cleared and abs(truth) >= DELTA
        schedule.verdicts += verdict != "not yet known" or (name == "reference" and cleared)
        schedule.wrong_verdicts += wrong


def _full(run: TrainingRun, index: int, kept: dict[int, float] | None = None) -> np.ndarray:
    """A full evaluation's outcomes by item: those its probe `kept`, the others played now (as
    the watch keeps a probe's attempts in the full evaluation it fires)."""
    kept = kept or {}
    outcomes = np.zeros(ITEMS)
    rest = np.array([i for i in range(ITEMS) if i not in kept], dtype=int)
    outcomes[rest] = run.outcomes(index, rest)
    for item, outcome in kept.items():
        outcomes[item] = outcome
    return outcomes


@dataclass(frozen=True)
class Outcome:
    """How one schedule did on one run."""

    evals: int
    played: int
    delays: list[int]  # of the trend's real changes
    jittered_delays: list[int]  # of the checkpoints' own accuracy's (jitter and all)
    false_alarms: int
    missed: int
    excursions: int  # moves of DELTA that were over before an evaluation
    verdicts: int
    wrong_verdicts: int
    forecast_errors: dict[int, list[float]]
    persistence_errors: dict[int, list[float]]


def score(run: TrainingRun, schedule: Schedule, played: int) -> Outcome:
    """How the schedule did: real changes of the trend and their delays, the same counted on
    each checkpoint's own accuracy (jitter and all), false alarms."""
    changes = _changes(run.steps, run.trend, schedule.evals)
    jittered = _changes(run.steps, run.true, schedule.evals)
    false_alarms = sum(jittered.moved[step] < DELTA / 2 for step in schedule.on_change)
    return Outcome(
        len(schedule.evals), played, changes.delays, jittered.delays, false_alarms,
        changes.missed, changes.excursions, schedule.verdicts, schedule.wrong_verdicts,
        schedule.forecast_errors, schedule.persistence_errors,
    )  # fmt: skip


@dataclass(frozen=True)
class Changes:
    """The real changes of one curve under one schedule."""

    delays: list[int]
    missed: int
    excursions: int  # moves of DELTA that were over before an evaluation
    moved: dict[int, float]  # at each full evaluation: the move since the last (inf at the first)


def _changes(steps: Sequence[int], levels: Sequence[float], evals: dict[int, float]) -> Changes:
    """Walk the checkpoints: when each move of DELTA from the level at the last full evaluation
    starts, and when the next evaluation catches it."""
    reference: float | None = None  # the level at the last full evaluation
    started: int | None = None  # step the pending real change started at
    delays: list[int] = []
    excursions = 0
    moves: dict[int, float] = {}
    for step, level in zip(steps, levels, strict=True):
        moved = float("inf") if reference is None else abs(level - reference)
        if started is None and reference is not None and moved >= DELTA:
            started = step
        elif started is not None and moved < DELTA:
            excursions, started = excursions + 1, None  # over before anyone looked
        if step not in evals:
            continue
        moves[step] = moved
        if started is not None:
            delays.append(step - started)
            started = None
        reference = level
    missed = 0
    if started is not None:  # still waiting at the end: its wait so far, missed once overdue
        delays.append(steps[-1] - started)
        missed = int(delays[-1] >= INTERVAL)
    return Changes(delays, missed, excursions, moves)


@dataclass(frozen=True)
class Row:
    """One schedule over every run of a scenario."""

    name: str
    outcomes: list[Outcome]

    @property
    def evals(self) -> list[int]:
        return [o.evals for o in self.outcomes]

    @property
    def delays(self) -> list[int]:
        return [d for o in self.outcomes for d in o.delays]

    @property
    def jittered_delays(self) -> list[int]:
        return [d for o in self.outcomes for d in o.jittered_delays]

    def figures(self) -> dict[str, Any]:
        verdicts = sum(o.verdicts for o in self.outcomes)
        wrong = sum(o.wrong_verdicts for o in self.outcomes)
        return {
            "schedule": self.name,
            "full_evals_mean": statistics.fmean(self.evals),
            "full_evals_worst": max(self.evals),
            "items_played_mean": statistics.fmean(o.played for o in self.outcomes),
            "delay_median_steps": statistics.median(self.delays) if self.delays else 0,
            "delay_worst_steps": max(self.delays, default=0),
            "jittered_delay_worst_steps": max(self.jittered_delays, default=0),
            "real_changes": len(self.delays),
            "false_alarms_per_run": statistics.fmean(o.false_alarms for o in self.outcomes),
            "missed": sum(o.missed for o in self.outcomes),
            "excursions_unseen_per_run": statistics.fmean(o.excursions for o in self.outcomes),
            "verdicts": verdicts,
            "wrong_verdicts": wrong,
            "forecast_error": self._errors("forecast_errors"),
            "persistence_error": self._errors("persistence_errors"),
        }

    def _errors(self, kind: str) -> dict[str, float] | None:
        """Mean absolute error by steps ahead, over every run (None: no forecasts made)."""
        pooled: dict[int, list[float]] = {}
        for outcome in self.outcomes:
            for k, errors in getattr(outcome, kind).items():
                pooled.setdefault(k, []).extend(errors)
        return {f"{k} steps": statistics.fmean(e) for k, e in sorted(pooled.items())} or None


SCHEDULES: dict[str, Callable[[TrainingRun], Schedule]] = {
    **{f"every {k} steps": functools.partial(fixed, interval=k) for k in FIXED},
    "today's trigger": today,
    "bounded trigger": bounded,
}
REPLACED, BOUNDED = f"every {INTERVAL} steps", "bounded trigger"


def scenario_rows(name: str, seeds: range, spread: float) -> list[Row]:
    """Every schedule over the same runs (each schedule draws its own attempts)."""
    rows = []
    for label, schedule_of in SCHEDULES.items():
        outcomes = []
        for seed in seeds:
            run = simulate(SCENARIOS[name], f"{name}/{seed}", spread)
            schedule = schedule_of(run)
            outcomes.append(score(run, schedule, run.played))
        rows.append(Row(label, outcomes))
    return rows


def table(name: str, rows: Sequence[Row]) -> str:
    """One scenario's schedules side by side; ratios against the interval replaced."""
    base = next(r.figures() for r in rows if r.name == REPLACED)
    lines = [
        f"### {name}\n",
        "| schedule | full evals, mean / worst | ÷ every "
        f"{INTERVAL} | items played ÷ every {INTERVAL} | delay, median / worst (steps) "
        "| worst delay with jitter | false alarms per run | excursions unseen per run | missed "
        "| wrong verdicts "
        f"| forecast error {' / '.join(f'+{k}' for k in AHEAD)} (last score's) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        f = row.figures()
        wrong = f"{f['wrong_verdicts']} of {f['verdicts']}" if f["verdicts"] else "-"
        lines.append(
            f"| {row.name} | {f['full_evals_mean']:.1f} / {f['full_evals_worst']} "
            f"| {f['full_evals_mean'] / base['full_evals_mean']:.2f}x "
            f"| {f['items_played_mean'] / base['items_played_mean']:.2f}x "
            f"| {f['delay_median_steps']:.0f} / {f['delay_worst_steps']} "
            f"| {f['jittered_delay_worst_steps']} | {f['false_alarms_per_run']:.2f} "
            f"| {f['excursions_unseen_per_run']:.2f} "
            f"| {f['missed']} | {wrong} | {_error_cell(f)} |"
        )
    return "\n".join(lines)


def _error_cell(figures: dict[str, Any]) -> str:
    forecast, persistence = figures["forecast_error"], figures["persistence_error"]
    if forecast is None:
        return "-"
    mine = " / ".join(f"{e:.3f}" for e in forecast.values())
    theirs = " / ".join(f"{e:.3f}" for e in persistence.values())
    return f"{mine} ({theirs})"


def shortfalls(scenarios: dict[str, list[Row]]) -> list[str]:
    """Where the bounded trigger misses a goal, by scenario: a worst delay past the INTERVAL a
    fixed schedule bounds it by (on either count), fewer than GOAL fewer full evaluations, or
    a change never caught."""
    found = []
    for name, rows in scenarios.items():
        by_name = {r.name: r.figures() for r in rows}
        mine, replaced = by_name[BOUNDED], by_name[REPLACED]
        fewer = 1 - mine["full_evals_mean"] / replaced["full_evals_mean"]
        worst = max(mine[key] for key, _ in COUNTS)
        if worst > INTERVAL:
            found.append(f"{name}: worst delay {worst} steps > {INTERVAL}")
        if fewer < GOAL:
            found.append(f"{name}: {fewer:.0%} fewer full evaluations")
        if mine["missed"]:
            found.append(f"{name}: {mine['missed']} real changes never caught")
    return found


def later_than_replaced(scenarios: dict[str, list[Row]]) -> list[str]:
    """Where the bounded trigger's worst delay, within the bound, is longer than what
    evaluating every INTERVAL steps happened to give in the same runs."""
    found = []
    for name, rows in scenarios.items():
        by_name = {r.name: r.figures() for r in rows}
        for key, count in COUNTS:
            mine, theirs = by_name[BOUNDED][key], by_name[REPLACED][key]
            if mine > theirs:
                found.append(f"{name} ({count}): {mine} against {theirs}")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=100, help="first seed")
    parser.add_argument("--runs", type=int, default=50, help="runs (seeds) per scenario")
    parser.add_argument(
        "--spread", type=float, default=SPREAD, help="items' difficulty spread, in logits"
    )
    parser.add_argument(
        "--scenario", action="append", choices=sorted(SCENARIOS), help="only these (repeatable)"
    )
    parser.add_argument("--jobs", type=int, default=1, help="scenarios played at once")
    add_json_option(parser, "adaptive")
    args = parser.parse_args()
    about = machine()
    seeds = range(args.seed, args.seed + args.runs)
    print(
        f"{STEPS} steps, a checkpoint every {EVERY}, {ITEMS} items in a full evaluation, "
        f"{args.runs} runs per scenario (seeds {seeds.start}-{seeds.stop - 1}), items' "
        f"difficulty spread {args.spread} logits. Real change: the trend moved >= {DELTA} "
        "(beside it: a checkpoint's own accuracy did); false alarm: a change fired after a "
        f"move < {DELTA / 2}. Bounded trigger: "
        f"{BoundedSettings(delta=DELTA, max_delay_steps=INTERVAL)}"
        "\n"
    )
    chosen = args.scenario or list(SCENARIOS)
    play = functools.partial(scenario_rows, seeds=seeds, spread=args.spread)
    with ProcessPoolExecutor(args.jobs) as pool:
        scenarios = dict(zip(chosen, pool.map(play, chosen), strict=True))
    for name, rows in scenarios.items():
        print(table(name, rows) + "\n")
    missing = shortfalls(scenarios)
    goal = (
        f"goal: worst delay within the {INTERVAL} steps a fixed interval bounds it by (trend "
        f"and jitter counts) and {GOAL:.0%} fewer full evaluations, in every scenario"
    )
    verdict = f"{goal}: NOT met ({'; '.join(missing)})" if missing else f"{goal}: met"
    later = later_than_replaced(scenarios)
    beside = (
        f"worst delay longer than every {INTERVAL} steps' own in these runs: "
        f"{'; '.join(later) if later else 'none'}"
    )
    print(verdict)
    print(beside)
    figures = {
        "settings": {
            "delta": DELTA,
            "interval": INTERVAL,
            "items": ITEMS,
            "steps": STEPS,
            "spread": args.spread,
        },
        "scenarios": {name: [r.figures() for r in rows] for name, rows in scenarios.items()},
        "verdict": verdict,
        "later_than_every_interval": later,
    }
    write_results(args, figures, about)


if __name__ == "__main__":
    main()
