"""`agent-eval report`: a run's summary again and its HTML report, or two runs compared.

The HTML goes into the run directory (A's, when comparing) unless -o says elsewhere. With
--json a comparison goes to stdout as JSON alone; what people read goes to stderr.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from agent_eval.cli.common import console, err_console, fail, guarded
from agent_eval.errors import ConfigError
from agent_eval.report.choose import RUNS, choose_run
from agent_eval.report.compare import compare, comparison_notes, comparison_table
from agent_eval.report.html import compare_page, run_page
from agent_eval.report.paired import (
    comparison_json,
    flip_lines,
    paired_comparison,
    paired_table,
)
from agent_eval.report.runs import Run, load_run
from agent_eval.report.table import summary_table
from agent_eval.report.tuning import Tuned, load_tune, tune_table
from agent_eval.report.tuning_page import tune_page
from agent_eval.report.watching import (
    Checkpointed,
    load_watch,
    watch_page,
    watch_table,
)
from agent_eval.results.files import is_watch_directory
from agent_eval.tune.study_files import is_tune_directory

REPORT, COMPARISON = "report.html", "compare.html"


def report(
    ctx: typer.Context,
    runs: Annotated[
        list[Path] | None,
        typer.Argument(
            help=f"A run, watch or tune directory; of several (a glob), the latest. "
            f"Default: the latest under {RUNS}/.",
            metavar="RUN_DIR",
            show_default=False,
        ),
    ] = None,
    pair: Annotated[
        tuple[Path, Path] | None,
        typer.Option(
            "--compare",
            help="Compare run B with run A instead: B - A per metric, against the noise.",
            metavar="A B",
            show_default=False,
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help=f"Where to write the HTML. Default: RUN_DIR/{REPORT}, or A/{COMPARISON} "
            "with --compare.",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="With --compare: print the comparison as JSON on stdout, and nothing else there.",
        ),
    ] = False,
) -> None:
    """Print a run's summary and write its plots to one HTML file that opens offline.

    --compare A B: B - A for each metric, its 95% interval, and whether it exceeds the noise;
    runs over the same samples are also compared attempt by attempt (McNemar, paired bootstrap).
    A watch directory: each checkpoint's probe and decision, and the curve of full scores.
    A tune directory: its trials, optimisation history, Pareto front and parameter importances.
    """
    if pair is not None and runs:
        fail("give run directories to report, or --compare A B, not both")
    if as_json and pair is None:
        fail("--json prints a comparison: give it with --compare A B")
    document: dict[str, Any] | None = None
    if pair is not None:
        page, target, notes, document = _pair(*guarded(ctx, _load_pair, pair), out, as_json)
    else:
        chosen = guarded(ctx, choose_run, runs or [])
        print_notes(chosen.notes)
        page, target, notes = _one(ctx, chosen.path, out)
    # With --json, stdout holds the JSON alone, so that it parses.
    shown = err_console if as_json else console
    print_notes(notes, shown)
    written = guarded(ctx, write_page, target, page)
    shown.print(Text(f"Report: {written}\n{written.resolve().as_uri()}"), soft_wrap=True)
    if document is not None:
        typer.echo(json.dumps({**document, "report": str(written)}, indent=2, allow_nan=False))


def _one(ctx: typer.Context, path: Path, out: Path | None) -> tuple[str, Path, list[str]]:
    """A watch directory's curve, a tune directory's trials, or one run's summary and page."""
    if is_watch_directory(path):
        return _watched(guarded(ctx, load_watch, path), path, out)
    if is_tune_directory(path):
        return tune_report(guarded(ctx, load_tune, path), out)
    return _single(guarded(ctx, load_run, path), out)


def print_notes(notes: list[str], shown: Console = console) -> None:
    for note in notes:
        shown.print(Text.assemble(("note: ", "yellow"), note), soft_wrap=True)


def _single(run: Run, out: Path | None) -> tuple[str, Path, list[str]]:
    """Print the run's summary; return its page, where it goes, and the run's notes."""
    # A table's str title is rich markup: the run's names in it are escaped.
    console.print(summary_table(run.summary, title=escape(run.title)))
    return run_page(run), out or run.path / REPORT, run.notes


def _watched(
    entries: list[Checkpointed], path: Path, out: Path | None
) -> tuple[str, Path, list[str]]:
    """Print the checkpoints' decisions; return the curve's page and where it goes."""
    console.print(watch_table(entries))
    notes = [] if entries else ["no checkpoint has been handled yet"]
    return watch_page(path, entries), out or path / REPORT, notes


def tune_report(tuned: Tuned, out: Path | None) -> tuple[str, Path, list[str]]:
    """Print the trials; return the tune directory's page and where it goes."""
    console.print(tune_table(tuned))
    notes = [*tuned.notes, *([] if tuned.trials else ["no trial has started yet"])]
    return tune_page(tuned), out or tuned.path / REPORT, notes


def _pair(
    a: Run, b: Run, out: Path | None, as_json: bool
) -> tuple[str, Path, list[str], dict[str, Any] | None]:
    """Print the comparison, or keep it as JSON; return its page, where it goes, the notes."""
    rows, paired, notes = compare(a, b), paired_comparison(a, b), comparison_notes(a, b)
    page, target = compare_page(a, b, rows, paired), out or a.path / COMPARISON
    if as_json:
        return page, target, notes, comparison_json(rows, paired, notes)
    console.print(comparison_table(rows, a, b))
    console.print(paired_table(paired))
    for line in flip_lines(paired.pairing):
        console.print(Text(line), soft_wrap=True)
    return page, target, notes, None


def _load_pair(paths: tuple[Path, Path]) -> tuple[Run, Run]:
    return load_run(paths[0]), load_run(paths[1])


def write_page(target: Path, page: str) -> Path:
    try:
        target.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {target}: {exc.strerror}; choose another --out") from None
    return target
