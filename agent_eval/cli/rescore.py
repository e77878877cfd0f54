"""`agent-eval rescore`: a run's stored answers scored again into a new run, with no model call."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from agent_eval.cli.common import console, guarded
from agent_eval.metrics import Summary
from agent_eval.report.runs import Run
from agent_eval.report.table import definitions, summary_sections
from agent_eval.rescore import Change, Rescored, rescore

FLIPS = (Change.RIGHT_TO_WRONG, Change.WRONG_TO_RIGHT)


def rescore_command(
    ctx: typer.Context,
    run: Annotated[
        Path, typer.Argument(help="The run directory to score again.", metavar="RUN_DIR")
    ],
    reward: Annotated[
        str | None,
        typer.Option(
            "--reward",
            help="math, package.module:function or entry point. Default: the run's own.",
            metavar="REWARD",
            show_default=False,
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="The new run directory. Default: RUN_DIR-rescored-REWARD beside it.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Score a run's stored answers again (a fixed reward, a new parser) into a new run.

    RUN_DIR is left as it is; the new run has its own samples.jsonl, config.yaml and summary.
    """
    started = time.monotonic()
    rescored = guarded(ctx, rescore, run, reward, out)
    seconds = time.monotonic() - started
    for note in rescored.old.notes:
        console.print(Text.assemble(("note: ", "yellow"), note), soft_wrap=True)
    console.print(side_by_side(rescored))
    attempts, path = rescored.new.summary.attempts, rescored.new.path
    console.print(
        Text(
            f"Rescored {attempts} attempts in {seconds:.1f} s ({attempts / seconds:.0f}/s): "
            f"{path}\nagent-eval report {path}"
        ),
        soft_wrap=True,
    )


def side_by_side(rescored: Rescored) -> Table:
    """The headline figures before and after, and how many attempts the new reward changed, by
    kind of change."""
    old, new = rescored.old, rescored.new
    described = [f"before: {_described(old)}", f"after: {_described(new)}"]
    caption = Text("\n".join([*described, *definitions(new.summary)]))
    table = Table(caption=caption, box=box.SIMPLE)
    table.add_column("metric", no_wrap=True)
    table.add_column("before", justify="right")
    table.add_column("after", justify="right")
    before, after = headline(old.summary), headline(new.summary)
    for label in dict.fromkeys([*before, *after]):
        table.add_row(label, before.get(label, "n/a"), after.get(label, "n/a"))
    changes = rescored.changes
    table.add_section()
    table.add_row("attempts changed", "", str(changes.changed))
    for kind, count in changes.by_kind.items():
        # The flips are what a new reward is run for: shown even when there are none.
        if count or kind in FLIPS:
            table.add_row(f"  {kind}", "", str(count))
    return table


def headline(summary: Summary) -> dict[str, str]:
    """Accuracy with its interval, mean reward, the other quality rows, the security rows of a
    run with attacks, and the errors."""
    sections = {name: dict(rows) for name, rows in summary_sections(summary)}
    quality = sections.get("Quality", {})
    accuracy = {"accuracy": quality.pop("accuracy")} if "accuracy" in quality else {}
    errors = sections.get("Efficiency", {}).get("errors")
    return {
        **accuracy,
        "mean reward": format(summary.mean_reward, ".3f"),
        **quality,
        **sections.get("Security", {}),
        **({"errors": errors} if errors is not None else {}),
    }


def _described(run: Run) -> str:
    reward = run.config.reward.function if run.config is not None else "unknown"
    return f"{run.path} (reward {reward})"
