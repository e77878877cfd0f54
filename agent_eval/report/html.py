"""The report page: one HTML file with inline CSS and SVG, no scripts, nothing fetched.

Every string that comes from a run (ids, answers, names, paths) goes through html.escape.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from urllib.parse import urlsplit

from agent_eval import __version__
from agent_eval.metrics import AttemptScore, Estimate
from agent_eval.report.attacks import attacks_section
from agent_eval.report.breaks import Break, breaks, questions
from agent_eval.report.checker_errors import checker_errors_section
from agent_eval.report.compare import (
    HEADERS,
    Row,
    comparison_notes,
    pass_estimate,
)
from agent_eval.report.drifts import drifts_section
from agent_eval.report.paired import (
    PAIRED_HEADERS,
    PairedComparison,
    flip_label,
    flips,
)
from agent_eval.report.programs import programs_section
from agent_eval.report.runs import Run
from agent_eval.report.svg import Bar, Group, bar_chart, heatmap, histogram
from agent_eval.report.table import summary_caption, summary_sections
from agent_eval.results.files import WORKERS

MAX_SESSIONS = 100  # heatmap rows; a taller picture is scrolled past, not read
MAX_UNSOLVED = 20
MAX_BREAKS = 50
NO_WORKERS = (
    f"no worker data: {WORKERS} is missing (runs made before it was saved, or by other tools)"
)
INTERVALS = (
    "Intervals are 95%. Rates: Newcombe's interval from each run's Wilson interval; pass@k and "
    "session success count as proportions over samples and sessions, which is conservative. "
    "Means: normal (Welch) interval over attempts. A difference exceeds the noise when its "
    "interval excludes 0."
)
STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; color: #222; max-width: 1240px;
       margin: 2rem auto; padding: 0 1rem; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: .5rem 0 1rem; }
th, td { padding: .2rem .8rem; border-bottom: 1px solid #eee; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.section th { padding-top: .8rem; }
caption { caption-side: bottom; text-align: left; color: #666; font-size: .85rem; }
figure { display: inline-block; vertical-align: top; margin: 0 1.5rem 1.5rem 0;
         max-width: 560px; }
figcaption { font-size: .85rem; color: #555; }
svg { max-width: 100%; height: auto; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
.wide { overflow-x: auto; } .wide td { white-space: nowrap; }
.runs { display: grid; grid-template-columns: 1fr 1fr; gap: 2rem; }
.notes { color: #8a5a00; } .empty { color: #777; font-style: italic; }
.breaks td { vertical-align: top; max-width: 320px; }
.better { color: #1a7f37; font-weight: bold; } .worse { color: #c62828; font-weight: bold; }
footer { margin-top: 3rem; color: #999; font-size: .8rem; }
.program { margin: .6rem 0; } .program summary { cursor: pointer; font-weight: bold; }
pre.tail, pre.diff { background: #f6f6f6; padding: .4rem; max-height: 24rem; overflow: auto;
                     white-space: pre-wrap; }
.diff span { display: block; } .diff-add { background: #e6ffec; color: #116329; }
.diff-del { background: #ffebe9; color: #a3231a; } .diff-hunk { color: #0550ae; }
.diff-file { font-weight: bold; }
"""


def run_page(run: Run) -> str:
    """One run: config, notes, headline numbers, plots, the samples it never solved, those a
    perturbation broke, the attacks that reached their goal, the programs that went wrong and
    the attempts whose turns drift."""
    body = [
        f"<h1>{escape(run.title)}</h1>",
        _config_table([run]),
        notes_list(run.notes),
        "<h2>Headline</h2>",
        _headline(run, "headline"),
        "<h2>Plots</h2>",
        *_figures(run, ""),
        _unsolved(run),
        _broken(run),
        attacks_section(run.scores),
        checker_errors_section(run.scores),
        programs_section(run.programs),
        drifts_section(run.scores),
    ]
    return page(f"agent-eval report: {run.title}", body)


def compare_page(a: Run, b: Run, rows: Sequence[Row], paired: PairedComparison) -> str:
    """Two runs: the differences with their verdicts, paired ones, then each run's own plots."""
    quality = bar_chart(_quality_groups([a, b]), "rate", top=1.0, legend=["A", "B"])
    body = [
        f"<h1>{escape(b.title)} (B) compared with {escape(a.title)} (A)</h1>",
        _config_table([a, b]),
        notes_list(comparison_notes(a, b)),
        "<h2>Differences</h2>",
        _comparison(rows),
        _paired(paired),
        figure("compare-quality", quality, f"Accuracy and pass@k of A and B. {INTERVALS}"),
        f'<div class="runs">{_column(a, "A")}{_column(b, "B")}</div>',
    ]
    return page(f"agent-eval comparison: {b.title} vs {a.title}", body)


def _column(run: Run, name: str) -> str:
    prefix = f"{name.lower()}-"
    figures = "".join(_figures(run, prefix))
    headline = _headline(run, f"{prefix}headline")
    return f"<section><h2>{name}: {escape(run.title)}</h2>{headline}{figures}</section>"


@dataclass(frozen=True)
class Plot:
    """One plot of a run, by name; without an SVG (no data for it) the caption says why."""

    name: str
    svg: str | None
    caption: str


def plots(run: Run) -> list[Plot]:
    """Each plot the report shows of one run, in the page's order."""
    summary, scores = run.summary, run.scores
    latency, tokens = summary.latency_s, summary.tokens
    # With variants, quality counts the originals alone (the robustness plot has the rest).
    originals = " at the original samples" if summary.by_kind else ""
    found = [
        Plot(
            "accuracy",
            bar_chart(_quality_groups([run]), "rate", top=1.0),
            f"Accuracy over {summary.accuracy.n} scored attempts{originals} and pass@k over "
            f"{summary.samples} samples, with 95% Wilson intervals (for pass@k over samples: "
            "conservative).",
        ),
        Plot(
            "latency",
            histogram([score.latency_s for score in scores], "latency per attempt (s)"),
            f"Latency per attempt: p50 {latency.p50:.2f} s, p90 {latency.p90:.2f} s, "
            f"p99 {latency.p99:.2f} s, max {latency.max:.2f} s.",
        ),
        Plot(
            "prompt-tokens",
            histogram([score.prompt_tokens for score in scores], "prompt tokens per attempt"),
            f"Prompt tokens per attempt: mean {tokens.mean_prompt:,.0f}, summed over its model "
            "calls (each call's prompt holds the conversation so far).",
        ),
        Plot(
            "completion-tokens",
            histogram(
                [score.completion_tokens for score in scores], "completion tokens per attempt"
            ),
            f"Completion tokens per attempt: mean {tokens.mean_completion:,.0f}, the tokens the "
            "model generated, summed over its model calls.",
        ),
        _workers(run),
    ]
    if summary.sessions:
        found.append(_turn_rewards(run))
    if summary.by_kind:
        found.append(_robustness(run))
    return found


def _figures(run: Run, prefix: str) -> list[str]:
    """Each plot of one run; figure ids get `prefix` so two runs can share a page."""
    return [_figure(f"{prefix}{plot.name}", plot) for plot in plots(run)]


def _figure(figure_id: str, plot: Plot) -> str:
    if plot.svg is None:  # nothing to draw: what the caption says stands in its place
        return figure(figure_id, f'<p class="empty">{escape(plot.caption)}</p>', "")
    return figure(figure_id, plot.svg, plot.caption)


def _quality_groups(runs: Sequence[Run]) -> list[Group]:
    """Accuracy and each pass@k all the runs have, one bar per run."""
    ks = [k for k in runs[0].summary.pass_at_k if all(k in r.summary.pass_at_k for r in runs)]
    groups = [Group("accuracy", [_bar(run.summary.accuracy) for run in runs])]
    for k in ks:
        groups.append(Group(f"pass@{k}", [_bar(pass_estimate(run.summary, k)) for run in runs]))
    return groups


def _workers(run: Run) -> Plot:
    if run.workers is None:
        return Plot("workers", None, NO_WORKERS)
    groups = [
        Group(urlsplit(worker.url).netloc or worker.url, [Bar(worker.served), Bar(worker.failures)])
        for worker in run.workers
    ]
    chart = bar_chart(groups, "requests", legend=["served", "failed"])
    states = ", ".join(
        f"{worker.url} {'healthy' if worker.healthy else 'unhealthy'} (breaker {worker.breaker})"
        for worker in run.workers
    )
    return Plot("workers", chart, f"Requests per worker, as the proxy counted them: {states}.")


def _robustness(run: Run) -> Plot:
    """Accuracy on the originals, then on each perturbation kind's variants."""
    summary = run.summary
    groups = [Group("originals", [_bar(summary.original_accuracy)])]
    groups += [Group(kind, [_bar(figures.accuracy)]) for kind, figures in summary.by_kind.items()]
    drops = "; ".join(
        f"{kind}: drop {figures.drop.value:+.3f} [{figures.drop.low:+.2f}, "
        f"{figures.drop.high:+.2f}], McNemar p {figures.mcnemar_p:.3g} over {figures.pairs} pairs"
        for kind, figures in summary.by_kind.items()
        if figures.pairs
    )
    caption = (
        "Accuracy on the original samples and on each kind of perturbed variant, with 95% "
        "Wilson intervals. The drop is original minus variant accuracy over the attempts both "
        "scored at the same index, with a 95% bootstrap interval over samples."
    )
    if drops:
        caption += f" {drops}."
    return Plot("robustness", bar_chart(groups, "accuracy", top=1.0), caption)


def _turn_rewards(run: Run) -> Plot:
    """Session x turn heatmap of rewards; samples in the order the run first met them."""
    order = {
        sample_id: i for i, sample_id in enumerate(dict.fromkeys(s.sample_id for s in run.scores))
    }
    # A session's attempt has an answer per turn, scored or not; a sample's has none.
    sessions = sorted(
        (score for score in run.scores if score.turn_answers is not None),
        key=lambda score: (order[score.sample_id], score.attempt),
    )
    shown = sessions[:MAX_SESSIONS]
    rows = [_turn_cells(score) for score in shown]
    turns = max((len(row) for row in rows), default=0)
    cells = [[*row, *[None] * (turns - len(row))] for row in rows]
    rewards = [reward for row in rows for reward in row if reward is not None]
    scale = (min([0.0, *rewards]), max([1.0, *rewards]))
    labels = [f"{score.sample_id}-{score.attempt}" for score in shown]
    columns = [str(turn + 1) for turn in range(turns)]
    chart = heatmap(cells, labels, columns, ("session", "turn"), scale)
    caption = (
        "Reward of each turn of each session (rows: sample-attempt, as session_id); "
        "grey where a session has no such turn or was not scored."
    )
    if len(sessions) > len(shown):
        caption += f" The first {len(shown)} of {len(sessions)} sessions."
    return Plot("turn-rewards", chart, caption)


def _turn_cells(score: AttemptScore) -> list[float | None]:
    """A session's reward per turn; a None per turn when the infrastructure left it unscored."""
    if score.turn_rewards is not None:
        return list(score.turn_rewards)
    return [None] * len(score.turn_answers or ())


def _unsolved(run: Run) -> str:
    """The samples no attempt got right, originals and variants counted apart as the headline
    counts them: over the samples with a scored attempt, the others said apart."""
    by_sample: defaultdict[str, list[AttemptScore]] = defaultdict(list)
    for score in run.scores:
        by_sample[score.sample_id].append(score)
    unsolved = sorted(
        ((i, s) for i, s in by_sample.items() if not any(x.correct for x in s)),
        key=lambda pair: natural_key(pair[0]),
    )
    heading = f"<h2>Samples never solved: {escape(_unsolved_counts(by_sample))}</h2>"
    if not unsolved:
        return f'<section id="unsolved">{heading}</section>'
    rows = "".join(
        f"<tr><td>{escape(sample_id)}</td><td>{escape(_answers(scores))}</td></tr>"
        for sample_id, scores in unsolved[:MAX_UNSOLVED]
    )
    more = f"<caption>the first {MAX_UNSOLVED}</caption>" if len(unsolved) > MAX_UNSOLVED else ""
    head = "<tr><th>sample</th><th>answers given</th></tr>"
    table = f'<table id="never-solved">{more}{head}{rows}</table>'
    return f'<section id="unsolved">{heading}{table}</section>'


def _unsolved_counts(by_sample: dict[str, list[AttemptScore]]) -> str:
    """Never right of those with a scored attempt, the originals then the variants."""
    originals = [s for s in by_sample.values() if s[0].variant_of is None]
    variants = [s for s in by_sample.values() if s[0].variant_of is not None]
    if not variants:
        return _never_right(originals, "")
    return f"{_never_right(originals, ' originals')}; {_never_right(variants, ' variants')}"


def _never_right(samples: list[list[AttemptScore]], name: str) -> str:
    scored = [s for s in samples if any(x.scored for x in s)]
    wrong = sum(not any(x.correct for x in s) for s in scored)
    unscored = len(samples) - len(scored)
    more = f" ({unscored} more never scored)" if unscored else ""
    return f"{wrong} of {len(scored)}{name}{more}"


def _broken(run: Run) -> str:
    """The attempts right on the original and wrong on a variant, the two side by side."""
    if not run.summary.by_kind:
        return ""
    found = sorted(
        breaks(run.scores),
        key=lambda b: (natural_key(b.original.sample_id), b.variant.sample_id, b.variant.attempt),
    )
    heading = (
        f"<h2>Broken by a perturbation: {len(found)} attempts right on the original and "
        "wrong on its variant</h2>"
    )
    if not found:
        return f'<section id="breaks">{heading}</section>'
    shown = found[:MAX_BREAKS]
    wanted = {(s.sample_id, s.attempt) for b in shown for s in (b.original, b.variant)}
    asked = questions(run.path, wanted)
    rows = "".join(_break_row(b, asked) for b in shown)
    more = f"<caption>the first {MAX_BREAKS}</caption>" if len(found) > MAX_BREAKS else ""
    head = (
        "<tr><th>attempt</th><th>original</th><th>its question</th><th>answer</th>"
        "<th>variant</th><th>its question</th><th>answer</th></tr>"
    )
    table = f'<table id="broken" class="breaks">{more}{head}{rows}</table>'
    return f'<section id="breaks">{heading}{table}</section>'


def _break_row(broken: Break, asked: dict[tuple[str, int], str]) -> str:
    cells = [str(broken.variant.attempt)]
    for side in (broken.original, broken.variant):
        question = asked.get((side.sample_id, side.attempt), "")
        cells += [side.sample_id, question or "(not recorded)", _answer(side)]
    return "<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in cells) + "</tr>"


def _headline(run: Run, table_id: str) -> str:
    rows = []
    for section, entries in summary_sections(run.summary):
        rows.append(f'<tr class="section"><th colspan="2">{escape(section)}</th></tr>')
        rows += [
            f'<tr><td>{escape(k)}</td><td class="num">{escape(v)}</td></tr>' for k, v in entries
        ]
    caption = escape(summary_caption(run.summary))
    return f'<table id="{table_id}"><caption>{caption}</caption>{"".join(rows)}</table>'


def _config_table(runs: Sequence[Run]) -> str:
    fields = [_config_fields(run) for run in runs]
    keys = dict.fromkeys(key for field in fields for key in field)
    head = "<tr><th></th><th>A</th><th>B</th></tr>" if len(runs) == 2 else ""
    rows = "".join(
        f"<tr><th>{escape(key)}</th>"
        + "".join(f"<td>{escape(field.get(key, ''))}</td>" for field in fields)
        + "</tr>"
        for key in keys
    )
    return f'<table id="config">{head}{rows}</table>'


def _config_fields(run: Run) -> dict[str, str]:
    config = run.config
    if config is None:
        return {
            "run directory": str(run.path.resolve()),
            "config": "no config.yaml in the run directory",
            "model": model_used(run),
        }
    return {
        "run directory": str(run.path.resolve()),
        "agent": config.agent.name,
        "dataset": config.dataset_name,
        "model": model_used(run),
        **({"model path": config.model.path} if config.model.path else {}),
        "backend": config.rollout.backend,
        "attempts per sample": str(config.eval.n_samples),
    }


def model_used(run: Run) -> str:
    """The model name the run's requests carried: the config's, else the one the workers served."""
    if run.config is not None and run.config.model.name:
        return run.config.model.name
    if run.workers is None:
        return f"not recorded (no {WORKERS}): the first model the workers served"
    served = list(dict.fromkeys(model for worker in run.workers for model in worker.models))
    if len(served) > 1:
        # The run took the first model the proxy listed; the snapshot does not say which that was.
        return f"the first the proxy listed of: {', '.join(served)}"
    return served[0] if served else f"not recorded ({WORKERS} lists no model)"


def _comparison(rows: Sequence[Row]) -> str:
    head = "".join(f"<th>{escape(header)}</th>" for header in HEADERS)
    body = "".join(_comparison_row(row) for row in rows)
    caption = f"<caption>{escape(INTERVALS)}</caption>"
    return f'<table id="comparison">{caption}<tr>{head}</tr>{body}</table>'


def _comparison_row(row: Row, *extra: str) -> str:
    tone = {True: " better", False: " worse", None: ""}[row.better]
    classes = ["", "num", "num", f"num{tone}", "num", "num", *[""] * len(extra)]
    cells = "".join(
        f'<td class="{cls}">{escape(text)}</td>'
        for cls, text in zip(classes, (*row.cells(), *extra), strict=True)
    )
    return f"<tr>{cells}</tr>"


def _paired(paired: PairedComparison) -> str:
    """Accuracy and mean reward paired by sample and attempt (or unpaired), and the flips."""
    how = "paired by sample and attempt" if paired.paired else "unpaired"
    head = "".join(f"<th>{escape(header)}</th>" for header in PAIRED_HEADERS)
    body = "".join(
        _comparison_row(row, method)
        for row, method in zip(paired.rows, paired.methods, strict=True)
    )
    caption = f"<caption>{escape(paired.note)}</caption>"
    table = f'<table id="paired">{caption}<tr>{head}</tr>{body}</table>'
    flipped = "".join(
        f'<tr><th>{escape(name)}</th><td class="num">{len(keys)}</td>'
        f"<td>{escape(', '.join(flip_label(key) for key in keys))}</td></tr>"
        for name, keys in flips(paired.pairing)
    )
    flip_caption = "<caption>attempts as sample#attempt, scored in both runs</caption>"
    flip_table = f'<table id="flips">{flip_caption}{flipped}</table>'
    return f'<section id="paired-section"><h2>B - A, {how}</h2>{table}{flip_table}</section>'


def figure(figure_id: str, content: str, caption: str) -> str:
    """A figure with its caption; `content` is trusted markup (SVG), the caption is escaped."""
    return f'<figure id="{figure_id}">{content}<figcaption>{escape(caption)}</figcaption></figure>'


def notes_list(notes: Sequence[str]) -> str:
    """The notes as a list the page shows apart; nothing when there are none."""
    items = "".join(f"<li>{escape(note)}</li>" for note in notes)
    return f'<ul class="notes">{items}</ul>' if notes else ""


def page(title: str, body: Sequence[str]) -> str:
    """One self-contained HTML page: inline style, no scripts, nothing fetched."""
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head>"
        f"<body>{''.join(body)}<footer>agent-eval {__version__}</footer></body></html>\n"
    )


def _bar(estimate: Estimate) -> Bar:
    return Bar(estimate.value, estimate.low, estimate.high)


def _answers(scores: Sequence[AttemptScore]) -> str:
    """The distinct answers given, in order; clipped, since answers can be long."""
    answers = dict.fromkeys(_answer(score) for score in scores)
    text = " · ".join(answers)
    return text if len(text) <= 120 else text[:119] + "…"


def _answer(score: AttemptScore) -> str:
    """The attempt's answer, or why it has none: the error it ended with, or an unparsed output."""
    if score.answer:
        return score.answer
    if score.error_kind is not None:
        return f"(no answer: {score.error_kind})"
    return "(no answer parsed from the output)"


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that puts "gsm8k-2" before "gsm8k-10": digit runs compare as numbers."""
    parts = re.split(r"(\d+)", text)
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in parts)
