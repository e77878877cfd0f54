"""`agent-eval perturb`: how many samples each perturbation gives a variant, with no model call."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.table import Table

from agent_eval.cli.common import console, fail, guarded
from agent_eval.cli.options import option, overrides_argument, settings_given
from agent_eval.perturb.coverage import Coverage, coverage
from agent_eval.run.config import RunConfig, load_run_config
from agent_eval.run.parts import dataset_items


def perturb_command(
    ctx: typer.Context,
    overrides: Annotated[list[str] | None, overrides_argument("dataset.subset=100")] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config", "-c", help="A YAML run config (see configs/).", show_default=False
        ),
    ] = None,
    dataset: Annotated[str | None, option("dataset")] = None,
    data_file: Annotated[Path | None, option("data_file")] = None,
    limit: Annotated[int | None, option("limit")] = None,
    perturb: Annotated[str | None, option("perturb")] = None,
    seed: Annotated[int | None, option("seed")] = None,
) -> None:
    """Count the variants `agent-eval run --perturb` would play, per kind, without a model."""
    flags = settings_given(ctx)
    resolved: RunConfig = guarded(ctx, load_run_config, config, flags, overrides or [])
    kinds = resolved.dataset.perturb
    if not kinds:
        fail("name the perturbations to count: --perturb numbers,names,distractor")
    counted = guarded(ctx, _counted, resolved, kinds)
    console.print(coverage_table(resolved.dataset_name, counted))


def _counted(config: RunConfig, kinds: list[str]) -> list[Coverage]:
    return coverage(dataset_items(config), kinds)


def coverage_table(dataset: str, counted: list[Coverage]) -> Table:
    """One row per kind: its variants, of how many originals, and the share."""
    table = Table(title=f"variants of {dataset}", box=box.SIMPLE)
    for column in ("perturbation", "variants", "originals", "share"):
        table.add_column(column, justify="left" if column == "perturbation" else "right")
    for row in counted:
        table.add_row(row.kind, str(row.variants), str(row.originals), f"{row.share:.1%}")
    return table
