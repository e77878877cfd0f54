"""`agent-eval report`: a run's summary again and its HTML report, or two runs compared.

The HTML goes into the run directory (A's, when comparing) unless -o says elsewhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.text import Text

from agent_eval.cli.common import console, fail, guarded
from agent_eval.errors import ConfigError
from agent_eval.report.choose import RUNS, choose_run
from agent_eval.report.compare import compare, comparison_notes, comparison_table
from agent_eval.report.html import compare_page, run_page
from agent_eval.report.runs import Run, load_run
from agent_eval.report.table import summary_table
from agent_eval.report.watching import (
    Checkpointed,
    is_watch_directory,
    load_watch,
    watch_page,
    watch_table,
)

REPORT, COMPARISON = "report.html", "compare.html"


def report(
    ctx: typer.Context,
    runs: Annotated[
        list[Path] | None,
        typer.Argument(
            help=f"A run or watch directory; of several (a glob), the latest. "
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
) -> None:
    """Print a run's summary and write its plots to one HTML file that opens offline.

    --compare A B: B - A for each metric, its 95% interval, and whether it exceeds the noise.
    A watch directory: each checkpoint's probe and decision, and the curve of full scores.
    """
    if pair is not None and runs:
        fail("give run directories to report, or --compare A B, not both")
    if pair is not None:
        page, target, notes = _pair(*guarded(ctx, _load_pair, pair), out)
    else:
        chosen = guarded(ctx, choose_run, runs or [])
        _print_notes(chosen.notes)
        page, target, notes = _one(ctx, chosen.path, out)
    _print_notes(notes)
    written = guarded(ctx, _write, target, page)
    console.print(Text(f"Report: {written}\n{written.resolve().as_uri()}"), soft_wrap=True)


def _one(ctx: typer.Context, path: Path, out: Path | None) -> tuple[str, Path, list[str]]:
    """A watch directory's curve, or one run's summary and page."""
    if is_watch_directory(path):
        return _watched(guarded(ctx, load_watch, path), path, out)
    return _single(guarded(ctx, load_run, path), out)


def _print_notes(notes: list[str]) -> None:
    for note in notes:
        console.print(Text.assemble(("note: ", "yellow"), note), soft_wrap=True)


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


def _pair(a: Run, b: Run, out: Path | None) -> tuple[str, Path, list[str]]:
    """Print the comparison; return its page, where it goes, and the notes on both runs."""
    rows = compare(a, b)
    console.print(comparison_table(rows, a, b))
    return compare_page(a, b, rows), out or a.path / COMPARISON, comparison_notes(a, b)


def _load_pair(paths: tuple[Path, Path]) -> tuple[Run, Run]:
    return load_run(paths[0]), load_run(paths[1])


def _write(target: Path, page: str) -> Path:
    try:
        target.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {target}: {exc.strerror}; choose another --out") from None
    return target
