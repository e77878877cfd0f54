"""`agent-eval watch`: evaluate a training run's checkpoints as they appear, when it matters."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from agent_eval.cli.common import console, err_console, guarded
from agent_eval.cli.options import WHAT, WHEN, option, overrides_argument, settings_given
from agent_eval.progress import RunView
from agent_eval.results.files import DECISIONS
from agent_eval.run.config import load_run_config
from agent_eval.run.evaluation import plan
from agent_eval.system.lifecycle import run_until_signalled
from agent_eval.trigger.watch import watch


def watch_command(
    ctx: typer.Context,
    checkpoints: Annotated[
        Path, typer.Argument(help="The folder the training job saves checkpoints into.")
    ],
    overrides: Annotated[list[str] | None, overrides_argument("watch.max_steps=500")] = None,
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="A YAML run config (see configs/).")
    ] = None,
    agent: Annotated[str | None, option("agent")] = None,
    dataset: Annotated[str | None, option("dataset")] = None,
    data_file: Annotated[Path | None, option("data_file")] = None,
    backend: Annotated[str | None, option("backend", WHAT)] = None,
    probe_size: Annotated[int | None, option("probe_size")] = None,
    threshold: Annotated[float | None, option("threshold")] = None,
    max_steps: Annotated[int | None, option("max_steps")] = None,
    run_dir: Annotated[Path | None, option("run_dir", WHEN)] = None,
) -> None:
    """Probe every new checkpoint; run a full evaluation when the score moves or time passes."""
    flags = settings_given(ctx)
    resolved = guarded(ctx, load_run_config, config, flags, overrides or [])
    checked = guarded(ctx, plan, resolved, False)

    async def watched() -> int:
        async with RunView(console, f"watching {checkpoints}") as view:
            return await watch(checked, checkpoints, view)

    handled = guarded(ctx, run_until_signalled, watched())
    _finished(handled, resolved.run_dir)


def _finished(handled: int | None, run_dir: Path) -> None:
    """How the watch ended (None: a signal stopped it), and where its decisions and curve are."""
    how = "stopped" if handled is None else f"{handled} checkpoint(s) handled"
    err_console.print(
        Text(f"{how}; decisions in {run_dir / DECISIONS}; the curve: agent-eval report {run_dir}"),
        soft_wrap=True,
    )
