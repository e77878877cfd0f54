"""`agent-eval report`: a run's summary again and its HTML report, or two runs compared."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.text import Text

from agent_eval.cli import app
from agent_eval.cli.common import console, guarded
from agent_eval.errors import ConfigError
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


@app.command()
def report(
    ctx: typer.Context,
    runs: Annotated[
        list[Path],
        typer.Argument(
            help="A run directory; or two, A then B, to compare B with A.",
            metavar="RUN_DIR",
            show_default=False,
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help=f"Where to write the HTML. Default: RUN_DIR/{REPORT} for one run, "
            f"./{COMPARISON} (in the current directory) for two.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Print a run's summary and write its plots to one HTML file that opens offline.

    Two runs: B - A for each metric, its 95% interval, and whether it exceeds the noise.
    A watch directory: each checkpoint's probe and decision, and the curve of full scores.
    """
    if len(runs) == 1 and is_watch_directory(runs[0]):
        page, target, notes = _watched(guarded(ctx, load_watch, runs[0]), runs[0], out)
    else:
        loaded = guarded(ctx, _load, runs)
        page, target, notes = _single(loaded[0], out) if len(loaded) == 1 else _pair(*loaded, out)
    for note in notes:
        console.print(Text.assemble(("note: ", "yellow"), note), soft_wrap=True)
    written = guarded(ctx, _write, target, page)
    console.print(Text(f"Report: {written}\n{written.resolve().as_uri()}"), soft_wrap=True)


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
    return compare_page(a, b, rows), out or Path(COMPARISON), comparison_notes(a, b)


def _load(paths: list[Path]) -> list[Run]:
    if len(paths) > 2:
        raise ConfigError(
            f"report takes one run directory, or two to compare, not {len(paths)}; "
            "compare runs two at a time"
        )
    return [load_run(path) for path in paths]


def _write(target: Path, page: str) -> Path:
    try:
        target.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {target}: {exc.strerror}; choose another --out") from None
    return target
