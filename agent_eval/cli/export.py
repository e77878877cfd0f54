"""`agent-eval export`: a run's attempts in another format, one file per attempt."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from agent_eval.cli.common import console, guarded
from agent_eval.results.exports.run import FORMATS, Exported, PlayedBy, export_run
from agent_eval.run.config import CONFIG_FILE, load_run_config

UNKNOWN_RUNNER = "agent-eval"
"""The agent's name in an export of a run without config.yaml: the harness that played it."""


def export(
    ctx: typer.Context,
    run: Annotated[Path, typer.Argument(help="The run directory to export.", metavar="RUN_DIR")],
    kind: Annotated[
        str,
        typer.Option("--format", "-f", help=f"The format: {', '.join(FORMATS)}.", metavar="FORMAT"),
    ] = "atif",
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="The folder to write to. Default: RUN_DIR/FORMAT/.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Write each attempt of a run as an ATIF trajectory (Harbor's format), one JSON file each.

    Files are named SAMPLE.ATTEMPT.json; each is written whole or not at all.
    """
    exported = guarded(ctx, _export, run, kind, out)
    for where in exported.torn:
        console.print(Text(f"note: {where} was cut off mid-write and is left out"), soft_wrap=True)
    console.print(Text(f"Wrote {exported.files} {kind} files to {exported.folder}"), soft_wrap=True)


def _export(run: Path, kind: str, out: Path | None) -> Exported:
    return export_run(run, kind, out, played_by(run))


def played_by(run: Path) -> PlayedBy:
    """The runner and model a run's config names; a run without config.yaml names neither."""
    path = run / CONFIG_FILE
    if not path.is_file():
        return PlayedBy(UNKNOWN_RUNNER, None)
    config = load_run_config(path, {}, [])
    return PlayedBy(config.agent.name, config.model.name)
