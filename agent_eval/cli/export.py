"""`agent-eval export`: a run's attempts in another format: ATIF files, SFT or RL JSONL."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from agent_eval.cli.common import console, guarded
from agent_eval.results.exports.lines import Selection
from agent_eval.results.exports.run import FORMATS, Exported, PlayedBy, export_run, tally
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
            help="Where to write: atif's folder (default RUN_DIR/atif/); the sft or rl file "
            "(default RUN_DIR/FORMAT.jsonl; FORMAT.jsonl inside it when it is an existing "
            "folder).",
            show_default=False,
        ),
    ] = None,
    min_reward: Annotated[
        float | None,
        typer.Option(
            "--min-reward",
            help="sft and rl: only the attempts with at least this reward.",
            show_default=False,
        ),
    ] = None,
    correct_only: Annotated[
        bool, typer.Option("--correct-only", help="sft and rl: only the correct attempts.")
    ] = False,
) -> None:
    """Write a run's attempts as ATIF trajectories (Harbor's format, one JSON file each), or as
    one JSONL file for training: sft (chat messages and tools) or rl (token ids, loss mask,
    log probabilities, rewards).

    Every file is written whole or not at all.

    sft and rl take the scored attempts and count the ones they leave out; no line: an error.
    """
    selection = Selection(min_reward, correct_only)
    exported = guarded(ctx, _export, run, kind, out, selection)
    for where in exported.torn:
        console.print(Text(f"note: {where} was cut off mid-write and is left out"), soft_wrap=True)
    if exported.notes:
        console.print(Text(f"note: {tally(exported)}"), soft_wrap=True)
    console.print(
        Text(f"Wrote {exported.written} {kind} {exported.unit} to {exported.path}"), soft_wrap=True
    )


def _export(run: Path, kind: str, out: Path | None, selection: Selection) -> Exported:
    return export_run(run, kind, out, played_by(run), selection)


def played_by(run: Path) -> PlayedBy:
    """The runner and model a run's config names; a run without config.yaml names neither."""
    path = run / CONFIG_FILE
    if not path.is_file():
        return PlayedBy(UNKNOWN_RUNNER, None)
    config = load_run_config(path, {}, [])
    return PlayedBy(config.agent.name, config.model.name)
