"""The HTML page of a tune directory: what was tuned, the trials, the optimisation history, the
running scores pruning cut, the Pareto front, parameter importances and the confirmation runs."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from html import escape
from urllib.parse import quote

from agent_eval.report.html import figure, notes_list, page
from agent_eval.report.svg import SERIES, Group, Point, Series, bar_chart, xy_chart
from agent_eval.report.tuning import (
    COMPLETE,
    PRUNED,
    Confirmation,
    ConfirmedScore,
    Interval,
    Trial,
    Tuned,
    param_text,
    running_value,
    seconds_text,
    state_text,
    value_text,
)

BEST, RUNNING = SERIES[2], "#999999"
STATE_COLOURS = {COMPLETE: SERIES[0], PRUNED: SERIES[1]}
STATE_ORDER = (COMPLETE, PRUNED, "fail", "running", "waiting")


def tune_page(tuned: Tuned) -> str:
    """The whole page, one self-contained HTML file."""
    title = f"agent-eval tune: {tuned.path.name}"
    body = [
        f"<h1>{escape(title)}</h1>",
        notes_list(tuned.notes),
        _what_was_tuned(tuned),
        _trials(tuned),
        _history(tuned),
        _tradeoff(tuned),
        _importances(tuned),
        *[_confirmation(tuned, confirmation) for confirmation in tuned.confirmations],
    ]
    return page(title, body)


def _what_was_tuned(tuned: Tuned) -> str:
    objectives = "".join(
        f"<tr><td>{escape(o.metric)}</td><td>{escape(o.direction)}</td></tr>"
        for o in tuned.objectives
    )
    space = "".join(
        f"<tr><td>{escape(key)}</td><td>{escape(json.dumps(value))}</td></tr>"
        for key, value in tuned.space.items()
    )
    subset = (
        f"Each trial ran on {tuned.subset} samples of the dataset."
        if tuned.subset is not None
        else "Each trial ran on the whole dataset."
    )
    counts = Counter(trial.state for trial in tuned.trials)
    states = sorted(counts, key=lambda s: STATE_ORDER.index(s) if s in STATE_ORDER else 99)
    by_state = ", ".join(f"{counts[state]} {state}" for state in states) or "none yet"
    return (
        '<section id="tuned"><h2>What was tuned</h2>'
        '<table id="objectives"><tr><th>objective</th><th>direction</th></tr>'
        f'{objectives}</table><table id="space"><tr><th>setting</th><th>searched over</th></tr>'
        f"{space}</table><p>{escape(subset)} Trials: {escape(by_state)}.</p></section>"
    )


def _trials(tuned: Tuned) -> str:
    names = tuned.param_names()
    intervals = any(trial.accuracy is not None for trial in tuned.trials)
    heads = [
        "trial",
        "state",
        *names,
        *(o.metric for o in tuned.objectives),
        *(["subset accuracy [95%]"] if intervals else []),
        "seconds",
        "run directory",
        "",
    ]
    mark = "best" if len(tuned.objectives) == 1 else "Pareto front"
    rows = "".join(_trial_row(tuned, trial, names, intervals, mark) for trial in tuned.trials)
    head = "".join(f"<th>{escape(h)}</th>" for h in heads)
    caption = "A pruned trial shows its last running score, at that share of its attempts."
    return (
        f'<section id="trials-section" class="wide"><h2>Trials</h2><table id="trials">'
        f"<caption>{escape(caption)}</caption><tr>{head}</tr>{rows}</table></section>"
    )


def _trial_row(tuned: Tuned, trial: Trial, names: list[str], intervals: bool, mark: str) -> str:
    best = trial.number in tuned.best
    cells = [
        _cell(str(trial.number), "num"),
        _cell(state_text(trial)),
        *[_cell(param_text(trial.params.get(name)), "num") for name in names],
        *[_cell(value_text(trial, i), "num") for i in range(len(tuned.objectives))],
        *([_cell(_interval_text(trial.accuracy), "num")] if intervals else []),
        _cell(seconds_text(trial.seconds), "num"),
        f"<td>{_link(trial.run_dir)}</td>",
        _cell(mark if best else "", "better"),
    ]
    row_class = ' class="best"' if best else ""
    return f"<tr{row_class}>{''.join(cells)}</tr>"


def _history(tuned: Tuned) -> str:
    """Per objective: each trial's value by trial number, pruned ones apart, the best so far."""
    figures = [_history_figure(tuned, index) for index in range(len(tuned.objectives))]
    if len(tuned.objectives) == 1:
        figures.append(_intermediate_figure(tuned))
    return f'<section id="history"><h2>Optimisation history</h2>{"".join(figures)}</section>'


def _history_figure(tuned: Tuned, index: int) -> str:
    objective = tuned.objectives[index]
    complete = [t for t in tuned.trials if t.state == COMPLETE and t.values]
    pruned = [t for t in tuned.trials if t.state == PRUNED and running_value(t) is not None]
    if not complete and not pruned:
        return _empty(f"history-{index}", "No trial has a value yet.")
    dots = [Point(t.number, _value(t, index), _tip(t, index)) for t in complete]
    rings = [Point(t.number, running_value(t) or 0.0, _tip(t, index)) for t in pruned]
    best = _best_so_far(complete, index, objective.maximize)
    best_tip = f"best so far: {best[-1].y:.4g}" if best else ""
    series = [
        Series(COMPLETE, dots, STATE_COLOURS[COMPLETE]),
        Series(PRUNED, rings, STATE_COLOURS[PRUNED], marker="ring"),
        Series("best so far", best, BEST, marker="", joined=True, tip=best_tip),
    ]
    chart = xy_chart([s for s in series if s.points], ("trial", objective.metric), whole_x=True)
    caption = (
        f"{objective.metric} ({objective.direction}) of each trial by trial number: "
        f"{len(complete)} complete, {len(pruned)} pruned (hollow: the last running score before "
        "pruning), and the best complete value so far."
    )
    return figure(f"history-{index}", chart, caption)


def _best_so_far(complete: Sequence[Trial], index: int, maximize: bool) -> list[Point]:
    """A step line: the best complete value so far, stepping at each trial that improved it."""
    points: list[Point] = []
    for trial in sorted(complete, key=lambda t: t.number):
        value = _value(trial, index)
        if points and not (value > points[-1].y if maximize else value < points[-1].y):
            continue
        if points:
            points.append(Point(trial.number, points[-1].y))
        points.append(Point(trial.number, value))
    if points:
        points.append(Point(max(t.number for t in complete), points[-1].y))
    return points


def _intermediate_figure(tuned: Tuned) -> str:
    """One line per trial: the running objective against the share of its attempts finished."""
    reported = [t for t in tuned.trials if t.intermediate]
    metric = tuned.objectives[0].metric
    if not reported:
        return _empty("intermediate", "No trial reported a running score.")
    lines = [
        Series(
            trial.state,
            [
                Point(step, value, f"trial {trial.number}, {step} attempts: {value:.4g}")
                for step, value in trial.intermediate
            ],
            STATE_COLOURS.get(trial.state, RUNNING),
            marker="",
            joined=True,
            tip=f"trial {trial.number} ({trial.state})",
        )
        for trial in reported
    ]
    cuts = [
        Point(
            *t.intermediate[-1], f"trial {t.number} pruned at {t.intermediate[-1][0]}% of attempts"
        )
        for t in reported
        if t.state == PRUNED
    ]
    cut = Series("", cuts, STATE_COLOURS[PRUNED], marker="ring")
    chart = xy_chart([*lines, cut], ("% of attempts finished", f"running {metric}"), whole_x=True)
    caption = (
        f"Running {metric} of each trial as its attempts finished; a ring marks where a pruned "
        f"trial was stopped ({len(cuts)} of {len(reported)})."
    )
    return figure("intermediate", chart, caption)


def _tradeoff(tuned: Tuned) -> str:
    """Two objectives: the Pareto plot; more: the front as a table; one: nothing."""
    if len(tuned.objectives) < 2:
        return ""
    front = [t for t in tuned.trials if t.number in tuned.best]
    heading = f"<h2>Pareto front: {len(front)} trial(s)</h2>"
    if len(tuned.objectives) > 2:
        return f'<section id="pareto-section">{heading}{_front_table(tuned, front)}</section>'
    complete = [t for t in tuned.trials if t.state == COMPLETE and t.values]
    if not complete:
        empty = '<p class="empty">No complete trial yet.</p>'
        return f'<section id="pareto-section">{heading}{empty}</section>'
    x, y = tuned.objectives
    others = [_pair(t) for t in complete if t.number not in tuned.best]
    on_front = sorted((_pair(t) for t in front), key=lambda p: p.x)
    chart = xy_chart(
        [
            Series("trial", others, SERIES[0]),
            Series("Pareto front", on_front, BEST, joined=True, tip="Pareto front"),
        ],
        (f"{x.metric} ({x.direction})", f"{y.metric} ({y.direction})"),
    )
    caption = (
        f"Every complete trial; the {len(front)} on the Pareto front (no other trial is better on "
        "one objective without being worse on the other) are joined."
    )
    return f'<section id="pareto-section">{heading}{figure("pareto", chart, caption)}</section>'


def _pair(trial: Trial) -> Point:
    values = trial.values or (0.0, 0.0)
    return Point(values[0], values[1], f"trial {trial.number}: {values[0]:.4g}, {values[1]:.4g}")


def _front_table(tuned: Tuned, front: Sequence[Trial]) -> str:
    names = tuned.param_names()
    heads = ["trial", *names, *(o.metric for o in tuned.objectives)]
    rows = "".join(
        "<tr>"
        + _cell(str(trial.number), "num")
        + "".join(_cell(param_text(trial.params.get(name)), "num") for name in names)
        + "".join(_cell(value_text(trial, i), "num") for i in range(len(tuned.objectives)))
        + "</tr>"
        for trial in front
    )
    head = "".join(f"<th>{escape(h)}</th>" for h in heads)
    return f'<table id="front"><tr>{head}</tr>{rows}</table>'


def _importances(tuned: Tuned) -> str:
    """Each parameter's importance per objective, or the sentence saying why there are none."""
    heading = "<h2>Parameter importances</h2>"
    reasons = [i.why_not for i in tuned.importances if i.why_not is not None]
    shown = [i for i in tuned.importances if i.why_not is None]
    sentences = "".join(f'<p class="empty">{escape(r)}</p>' for r in dict.fromkeys(reasons))
    if not shown:
        return f'<section id="importances-section">{heading}{sentences}</section>'
    params = list(dict.fromkeys(name for i in shown for name in i.by_param))
    head = "".join(f"<th>{escape(i.metric)}</th>" for i in shown)
    rows = "".join(
        f"<tr><td>{escape(name)}</td>"
        + "".join(_cell(f"{i.by_param.get(name, 0.0):.3f}", "num") for i in shown)
        + "</tr>"
        for name in params
    )
    caption = (
        "Share of each objective's variation the parameter explains (PED-ANOVA, Optuna's "
        "default: how much the parameter decides whether a trial reaches the best 10%), over "
        "the complete trials; rough with few trials. Parameters that took one value are left out."
    )
    table = (
        f'<table id="importances"><caption>{escape(caption)}</caption>'
        f"<tr><th>parameter</th>{head}</tr>{rows}</table>"
    )
    return f'<section id="importances-section">{heading}{table}{sentences}</section>'


def _confirmation(tuned: Tuned, confirmation: Confirmation) -> str:
    """The subset score beside the full-dataset one, per objective, and the winner's curse."""
    subset = f"{tuned.subset} samples" if tuned.subset is not None else "the subset"
    parts = []
    for index, score in enumerate(confirmation.scores):
        chart = bar_chart(
            [Group(score.metric, [score.subset.bar(), score.full.bar()])],
            score.metric,
            legend=("subset", "full dataset"),
        )
        caption = (
            f"{score.metric} of trial {confirmation.trial}'s settings on {subset} and on the "
            "full dataset, with 95% intervals where the runs recorded them."
        )
        figure_id = f"confirm-{confirmation.trial}-{index}"
        parts.append(figure(figure_id, chart, caption))
        parts.append(f'<p class="curse">{escape(curse_sentence(score))}</p>')
    config = f" ({confirmation.config})" if confirmation.config else ""
    heading = f"Trial {confirmation.trial}{config} on the full dataset"
    runs = f"<p>Full-dataset run: {_link(confirmation.run_dir)}</p>"
    return (
        f'<section id="confirm-{confirmation.trial}"><h2>{escape(heading)}</h2>{runs}'
        f"{''.join(parts)}</section>"
    )


def curse_sentence(score: ConfirmedScore) -> str:
    """How much the subset score overstated (or understated) the full one, and why it tends to."""
    difference = score.subset.value - score.full.value
    if difference == 0:
        how = "the same as the full one"
    else:
        how = f"{abs(difference):.3f} {'higher' if difference > 0 else 'lower'} than the full one"
    subset, full = score.subset.value, score.full.value
    said = f"On the subset, {score.metric} was {subset:.3f}, {how} ({full:.3f})"
    better = difference > 0 if score.maximize is not False else difference < 0
    if difference != 0 and better:
        return (
            f"{said}: the subset flattered the winner, as it tends to, since the winner was "
            "picked partly for its luck on those samples (the winner's curse); report the "
            "full-dataset score."
        )
    return (
        f"{said}: the subset did not flatter the winner this time, though a winner picked on a "
        "subset tends to be (the winner's curse); report the full-dataset score."
    )


def _value(trial: Trial, index: int) -> float:
    return trial.values[index] if trial.values else 0.0


def _tip(trial: Trial, index: int) -> str:
    params = ", ".join(f"{k}={param_text(v)}" for k, v in trial.params.items())
    return f"trial {trial.number} ({params}): {value_text(trial, index)}"


def _interval_text(interval: Interval | None) -> str:
    if interval is None:
        return "-"
    if not (math.isfinite(interval.low) and math.isfinite(interval.high)):
        return f"{interval.value:.3f}"
    return f"{interval.value:.3f} [{interval.low:.2f}, {interval.high:.2f}]"


def _link(run_dir: str | None) -> str:
    """The run directory, linked relative to the page (quoted, so never a scheme like js:)."""
    if not run_dir:
        return "-"
    return f'<a href="{escape(quote(run_dir))}">{escape(run_dir)}</a>'


def _cell(text: str, cls: str = "") -> str:
    attribute = f' class="{cls}"' if cls else ""
    return f"<td{attribute}>{escape(text)}</td>"


def _empty(figure_id: str, sentence: str) -> str:
    return figure(figure_id, f'<p class="empty">{escape(sentence)}</p>', "")
