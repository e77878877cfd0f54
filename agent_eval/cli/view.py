"""`agent-eval view`: browse runs in the web browser, down to every attempt's trajectory."""

from __future__ import annotations

import webbrowser
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from agent_eval.cli.common import console, fail, guarded
from agent_eval.report.choose import RUNS
from agent_eval.system.lifecycle import run_until_signalled
from agent_eval.view.control import ViewControl
from agent_eval.view.export import export_run
from agent_eval.view.server import serve_view

PORT = 7575
"""A fixed default, so the page's address can be bookmarked; --port 0 takes a free one."""


def view(
    ctx: typer.Context,
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help=f"Folders holding runs (searched all the way down). Default: {RUNS}/.",
            metavar="PATH",
            show_default=False,
        ),
    ] = None,
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on; others can read runs.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on; 0 takes a free one.")] = (
        PORT
    ),
    opened: Annotated[bool, typer.Option("--open", help="Open the page in the browser.")] = False,
    export: Annotated[
        Path | None,
        typer.Option(
            "--export",
            help="Write a static copy of one run's pages (PATH: the run's directory) to this "
            "new or empty folder, to open without a server; then exit.",
            metavar="DIR",
        ),
    ] = None,
    control: Annotated[
        bool,
        typer.Option(
            "--control",
            help="Let the page pause, resume, cancel, requeue and resize running runs; "
            "the printed address carries the token it needs.",
        ),
    ] = False,
) -> None:
    """Serve a local web page over runs: their accuracy, every attempt, every trajectory.

    It only reads the runs, and follows a running run as it writes; with --control its
    page also acts on running runs (as `agent-eval ctl`). Stop it with Ctrl-C.
    """
    if export is not None:
        _export(ctx, paths or [], export)
        return
    roots = paths or [RUNS]
    missing = [str(root) for root in roots if not root.is_dir()]
    if missing:
        fail(f"no such folder: {', '.join(missing)}; give folders that hold run directories")

    def ready(url: str) -> None:
        console.print(Text(f"Viewing runs under {', '.join(map(str, roots))} at {url}"))
        console.print(Text("Press Ctrl-C to stop.", style="dim"))
        if opened:
            webbrowser.open(url)

    serving = serve_view(roots, host, port, ready, ViewControl.enabled(control))
    guarded(ctx, run_until_signalled, serving)


def _export(ctx: typer.Context, paths: list[Path], out: Path) -> None:
    """The static copy of the one run `paths` names, written to `out`."""
    if len(paths) != 1:
        fail("--export copies one run: give its directory (agent-eval view runs/RUN --export DIR)")
    exported = guarded(ctx, export_run, paths[0], out)
    console.print(
        Text(
            f"Copied {paths[0]} to {exported.folder}: {exported.answers} pages of data "
            f"({exported.samples} samples, {exported.figures} plots); "
            f"open {exported.folder / 'index.html'} in a browser"
        ),
        soft_wrap=True,
    )
