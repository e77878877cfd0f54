"""`agent-eval run`: from a config to a summary, with live progress, resumable after Ctrl-C."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.markup import escape
from rich.text import Text

from agent_eval.cli.common import console, err_console, fail, guarded
from agent_eval.cli.options import HOW, option, overrides_argument, settings_given
from agent_eval.errors import StorageError
from agent_eval.failures import KINDS
from agent_eval.metrics import AttemptCounts, Summary
from agent_eval.progress import RunView
from agent_eval.report.table import summary_table
from agent_eval.results.files import UNSCORED, RunDirectory
from agent_eval.run.config import CONFIG_FILE, RunConfig, load_run_config
from agent_eval.run.control.protocol import RunCancelled
from agent_eval.run.engine import kept_attempts
from agent_eval.run.evaluation import (
    Plan,
    evaluate,
    plan,
    resume_config_path,
    resume_differences,
)
from agent_eval.run.identity import Difference, describe
from agent_eval.system.lifecycle import run_until_signalled

EMBEDDED_NEXT = (
    "This run shows the harness end to end on a tiny CPU model; to evaluate a real model, give "
    "the same command --endpoint URL (a running OpenAI-compatible server) "
    "or --backend sglang:d1 --model PATH."
)


def run(
    ctx: typer.Context,
    overrides: Annotated[
        list[str] | None, overrides_argument("eval.concurrency=32 scheduler.type=slurm")
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config", "-c", help="A YAML run config (see configs/).", show_default=False
        ),
    ] = None,
    agent: Annotated[str | None, option("agent")] = None,
    dataset: Annotated[str | None, option("dataset")] = None,
    data_file: Annotated[Path | None, option("data_file")] = None,
    limit: Annotated[int | None, option("limit")] = None,
    perturb: Annotated[str | None, option("perturb")] = None,
    n_samples: Annotated[int | None, option("n_samples")] = None,
    concurrency: Annotated[int | None, option("concurrency")] = None,
    processes: Annotated[int | None, option("processes")] = None,
    seed: Annotated[int | None, option("seed")] = None,
    reproducible: Annotated[bool, option("reproducible")] = False,
    temperature: Annotated[float | None, option("temperature")] = None,
    backend: Annotated[str | None, option("backend")] = None,
    model: Annotated[str | None, option("model")] = None,
    scheduler: Annotated[str | None, option("scheduler")] = None,
    endpoint: Annotated[list[str] | None, option("endpoint")] = None,
    run_dir: Annotated[Path | None, option("run_dir")] = None,
    proxy_processes: Annotated[int | None, option("proxy_processes")] = None,
    api_key: Annotated[str | None, option("api_key")] = None,
    worker_api_key: Annotated[str | None, option("worker_api_key")] = None,
    resume: Annotated[
        Path | None,
        typer.Option(help="Finish an interrupted run in this directory.", rich_help_panel=HOW),
    ] = None,
    replay_unscored: Annotated[
        bool,
        typer.Option(
            "--replay-unscored",
            help="With --resume: replay the attempts an infrastructure failure left unscored.",
            rich_help_panel=HOW,
        ),
    ] = False,
    # The old name, before replays had their own word; scripts written since still run.
    retry_errors: Annotated[bool, typer.Option("--retry-errors", hidden=True)] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="With --resume: go on though settings that change results differ from the run's.",
            rich_help_panel=HOW,
        ),
    ] = False,
) -> None:
    """Launch workers and the proxy, play every attempt, score it, summarise, tear down."""
    flags = settings_given(ctx)
    replay_unscored = replay_unscored or retry_errors
    if resume is None and replay_unscored:
        fail("--replay-unscored replays a run's unscored attempts: give it with --resume RUN")
    if resume is None and force:
        fail("--force lets a resume change what a run's results depend on: give it with --resume")
    if resume is not None:
        if config is not None or run_dir is not None:
            fail("--resume takes the run's own config and directory; leave out --config and -o")
        config = guarded(ctx, resume_config_path, resume)
        flags["output.dir"] = resume
    resolved: RunConfig = guarded(ctx, load_run_config, config, flags, overrides or [], True)
    checked = guarded(ctx, plan, resolved)
    if resume is not None:
        _check_identity(guarded(ctx, resume_differences, resolved), resume, force)
    if replay_unscored:
        guarded(ctx, _set_aside_unscored, resolved)
    done, kept = guarded(ctx, kept_attempts, RunDirectory(resolved.run_dir))
    if resume is not None:
        _say_resumed(checked, done)
    if resolved.on_embedded_model():
        console.print(Text(_embedded_setup(resolved), style="dim"), soft_wrap=True)
    summary = guarded(ctx, run_until_signalled, _watched(checked, kept))
    if summary is None:
        _interrupted(resolved)
    _finished(resolved, summary)


async def _watched(checked: Plan, kept: AttemptCounts) -> Summary:
    config = checked.config
    title = f"{config.agent.name} on {config.dataset_name}"
    total = checked.total * config.eval.n_samples
    at_once = config.eval.concurrency * config.eval.processes
    try:
        async with RunView(console, title, total=total, kept=kept, at_once=at_once) as view:
            summary = await evaluate(checked, view)
            view.finish(summary.throughput)
            return summary
    except RunCancelled as exc:
        said = ("cancelled", "bold yellow"), " by agent-eval ctl: ", exc.left
        err_console.print(Text.assemble(*said), soft_wrap=True)
        raise typer.Exit(exc.exit_code) from None
    except StorageError as exc:
        left = await asyncio.to_thread(_after_storage_error, config)
        raise StorageError(f"{exc}\n{left}") from exc


def _kept(config: RunConfig) -> int:
    """Finished attempts already in the run directory: a resumed run starts from them."""
    return sum(1 for _ in RunDirectory(config.run_dir).records())


def _played(config: RunConfig) -> bool:
    """Whether the run got as far as its first attempt: its config is saved just before."""
    return (config.run_dir / CONFIG_FILE).is_file()


def _after_storage_error(config: RunConfig) -> str:
    """What a run its directory's file system stopped has kept, and how to finish it."""
    if not _played(config):
        return "Nothing was played. Once there is room, run the same command again."
    return (
        f"{_kept(config)} finished attempts are kept in {config.run_dir}; workers and proxy "
        f"stopped. Once there is room, resume with: agent-eval run --resume {config.run_dir}"
    )


def _say_resumed(checked: Plan, done: set[tuple[str, int]]) -> None:
    """How many finished attempts a resume keeps, and how many of the run's it plays."""
    n_samples = checked.config.eval.n_samples
    attempts = ((item.id, attempt) for item in checked.items() for attempt in range(n_samples))
    to_play = sum(pair not in done for pair in attempts)
    total = checked.total * n_samples
    err_console.print(
        Text(
            f"resuming {checked.config.run_dir}: {len(done):,} finished attempts kept, "
            f"{to_play:,} of {total:,} to play"
        ),
        soft_wrap=True,
    )


def _check_identity(found: list[Difference], run_dir: Path, force: bool) -> None:
    """Refuse a resume that would mix two setups in a run's results; --force goes on, saying so."""
    if not found:
        return
    if not force:
        fail(
            f"{describe(run_dir, found)} Resume without those settings, "
            "or pass --force to mix them anyway."
        )
    message = f"{describe(run_dir, found, forced=True)} Going on, as --force asks."
    err_console.print(Text.assemble(("warning:", "bold yellow"), " ", message), soft_wrap=True)


def _set_aside_unscored(config: RunConfig) -> None:
    """Take the unscored attempts out of samples.jsonl, so that the resume replays them."""
    moved = len(RunDirectory(config.run_dir).set_aside_unscored())
    if moved:
        where = config.run_dir / UNSCORED
        message = f"replaying {moved} unscored attempts; their records are kept in {where}"
    else:
        message = f"{config.run_dir} has no unscored attempts; finishing it as a normal resume"
    err_console.print(Text(message), soft_wrap=True)


def _interrupted(config: RunConfig) -> NoReturn:
    if _played(config):
        left = (
            f": {_kept(config)} finished attempts are kept in {config.run_dir}; workers and "
            f"proxy stopped.\nResume with: agent-eval run --resume {config.run_dir}"
        )
    else:
        left = (
            " before any attempt was played; nothing is left running.\n"
            "To start it, run the same command again."
        )
    err_console.print(Text.assemble(("interrupted", "bold yellow"), left), soft_wrap=True)
    raise typer.Exit(130)


def _finished(config: RunConfig, summary: Summary) -> None:
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
    hint = overflow_hint(summary.attempts, summary.errors.by_kind)
    if hint is not None:
        err_console.print(Text(hint), soft_wrap=True)
    if not summary.complete:
        _over_budget(config, summary)
    if config.on_embedded_model():
        console.print(Text(EMBEDDED_NEXT), soft_wrap=True)


def overflow_hint(attempts: int, errors: Mapping[str, int]) -> str | None:
    """The setting to change when every attempt outgrew the model's context; None otherwise."""
    if not attempts or errors.get("context_overflow", 0) < attempts:
        return None
    return (
        "Every attempt outgrew the model's context (context_overflow). Launched workers take a "
        "longer one with model.context_length=N (llama.cpp's default is 2,048 tokens; the "
        "embedded SmolLM2-135M was trained for 8,192); a server given by --endpoint sets its own."
    )


def _embedded_setup(config: RunConfig) -> str:
    """What the first run on the embedded model plays, as its settings say."""
    first_tool = config.agent.options.get("tool_use") == "stop_on_first_tool"
    answer = ", the first calculator result taken as the answer" if first_tool else ""
    return (
        f"Embedded model (SmolLM2-135M on CPU): {config.dataset_name}, "
        f"{config.eval.n_samples} attempt(s) per problem at temperature "
        f"{config.sampling.temperature:g}{answer}."
    )


def _over_budget(config: RunConfig, summary: Summary) -> NoReturn:
    """The run stopped early: why, and how to finish it; exit code 3 (a mistake is 2)."""
    kind, count = next(iter(summary.unscored_by_kind.items()))
    known = KINDS.get(kind)
    why = f": {known.meaning}" if known is not None else ""
    err_console.print(
        Text.assemble(
            ("stopped early", "bold red"),
            f": {summary.unscored:,} of {summary.attempts:,} attempts ended unscored, more than "
            f"eval.max_unscored={config.eval.max_unscored:g} allows. Most were {kind} "
            f"({count:,}){why}. Once that is fixed, replay them with: "
            f"agent-eval run --resume {config.run_dir} --replay-unscored",
        ),
        soft_wrap=True,
    )
    raise typer.Exit(3)
