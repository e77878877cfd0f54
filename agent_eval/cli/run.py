"""`agent-eval run`: from a config to a summary, with live progress, resumable after Ctrl-C."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.text import Text

from agent_eval.cli import app
from agent_eval.cli.common import console, err_console, fail, flag, guarded
from agent_eval.config import (
    AgentSection,
    DatasetSection,
    EvalSection,
    ModelSection,
    OutputSection,
    RolloutSection,
    RunConfig,
    SamplingSection,
    load_run_config,
)
from agent_eval.evaluation import Plan, evaluate, plan, resume_config_path
from agent_eval.lifecycle import run_until_signalled
from agent_eval.metrics import Summary
from agent_eval.progress import RunView
from agent_eval.report.table import summary_table
from agent_eval.results import RunDirectory

WHAT, WHERE, HOW = "What to evaluate", "Where the model runs", "How"


@app.command()
def run(
    ctx: typer.Context,
    overrides: Annotated[
        list[str] | None,
        typer.Argument(
            help="Any setting as key=value, e.g. eval.concurrency=32 model.path=/ckpt "
            "scheduler.type=slurm (see configs/ for every key).",
            show_default=False,
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config", "-c", help="A YAML run config (see configs/).", show_default=False
        ),
    ] = None,
    agent: Annotated[str | None, flag(AgentSection, "name", WHAT, "--agent", "-a")] = None,
    dataset: Annotated[str | None, flag(DatasetSection, "name", WHAT, "--dataset", "-d")] = None,
    data_file: Annotated[Path | None, flag(DatasetSection, "path", WHAT, "--data-file")] = None,
    limit: Annotated[int | None, flag(DatasetSection, "limit", WHAT, "--limit")] = None,
    n_samples: Annotated[
        int | None, flag(EvalSection, "n_samples", HOW, "--n-samples", "-n")
    ] = None,
    concurrency: Annotated[
        int | None, flag(EvalSection, "concurrency", HOW, "--concurrency", "-j")
    ] = None,
    processes: Annotated[
        int | None, flag(EvalSection, "processes", HOW, "--processes", "-P")
    ] = None,
    seed: Annotated[int | None, flag(EvalSection, "seed", HOW, "--seed")] = None,
    temperature: Annotated[
        float | None, flag(SamplingSection, "temperature", HOW, "--temperature")
    ] = None,
    backend: Annotated[
        str | None, flag(RolloutSection, "backend", WHERE, "--backend", "-b")
    ] = None,
    model: Annotated[str | None, flag(ModelSection, "path", WHERE, "--model", "-m")] = None,
    scheduler: Annotated[
        str | None,
        typer.Option(help="Where workers run: local, ray or slurm.", rich_help_panel=WHERE),
    ] = None,
    endpoint: Annotated[
        list[str] | None, flag(RolloutSection, "endpoints", WHERE, "--endpoint", "-e")
    ] = None,
    run_dir: Annotated[Path | None, flag(OutputSection, "dir", HOW, "--run-dir", "-o")] = None,
    resume: Annotated[
        Path | None,
        typer.Option(help="Finish an interrupted run in this directory.", rich_help_panel=HOW),
    ] = None,
) -> None:
    """Launch workers and the proxy, play every attempt, score it, summarise, tear down."""
    flags = {
        "agent.name": agent,
        "dataset.name": dataset,
        "dataset.path": data_file,
        "dataset.limit": limit,
        "eval.n_samples": n_samples,
        "eval.concurrency": concurrency,
        "eval.processes": processes,
        "eval.seed": seed,
        "sampling.temperature": temperature,
        "rollout.backend": backend,
        "rollout.endpoints": endpoint,
        "model.path": model,
        "scheduler.type": scheduler,
        "output.dir": run_dir,
    }
    if resume is not None:
        if config is not None or run_dir is not None:
            fail("--resume takes the run's own config and directory; leave out --config and -o")
        config = guarded(ctx, resume_config_path, resume)
        flags["output.dir"] = resume
    resolved: RunConfig = guarded(ctx, load_run_config, config, flags, overrides or [])
    checked = guarded(ctx, plan, resolved)
    summary = guarded(ctx, run_until_signalled, _watched(checked))
    if summary is None:
        _interrupted(resolved)
    _finished(resolved, summary)


async def _watched(checked: Plan) -> Summary:
    config = checked.config
    title = f"{config.agent.name} on {config.dataset_name}"
    total = checked.total * config.eval.n_samples
    async with RunView(console, title, total=total, done=_kept(config)) as view:
        summary = await evaluate(checked, view)
        view.finish(summary.throughput)
        return summary


def _kept(config: RunConfig) -> int:
    """Finished attempts already in the run directory: a resumed run starts from them."""
    return sum(1 for _ in RunDirectory(config.run_dir).records())


def _interrupted(config: RunConfig) -> None:
    kept = _kept(config)
    err_console.print(
        Text.assemble(
            ("interrupted", "bold yellow"),
            f": {kept} finished attempts are kept in {config.run_dir}; workers and proxy stopped."
            f"\nResume with: agent-eval run --resume {config.run_dir}",
        ),
        soft_wrap=True,
    )
    raise typer.Exit(130)


def _finished(config: RunConfig, summary: Any) -> None:
    # A table's str title is rich markup: the names in it are escaped.
    title = escape(f"{config.agent.name} on {config.dataset_name}")
    console.print(summary_table(summary, title=title))
    console.print(
        Text(
            f"Results in {config.run_dir} (samples.jsonl, summary.json, config.yaml). "
            f"Report: agent-eval report {config.run_dir}"
        ),
        soft_wrap=True,
    )
