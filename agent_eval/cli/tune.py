"""`agent-eval tune`: search run settings with Optuna, each trial a real evaluation on a subset."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.text import Text

from agent_eval.cli.common import console, err_console, fail, guarded
from agent_eval.cli.options import WHAT, option, overrides_argument, settings_given
from agent_eval.cli.report import print_notes, tune_report, write_page
from agent_eval.metrics.objectives import parse_objectives
from agent_eval.report.tuning import Tuned, load_tune
from agent_eval.report.tuning_page import curse_sentence
from agent_eval.run.config import default_run_dir, load_run_config
from agent_eval.system.lifecycle import run_until_signalled
from agent_eval.tune.checks import check_space
from agent_eval.tune.console import ConsoleTune
from agent_eval.tune.outputs import Chosen, Confirmation, choose, confirm, confirmation_line
from agent_eval.tune.search import Tune, Tuner
from agent_eval.tune.space import SearchSpace
from agent_eval.tune.study import PrunerName, SamplerName, StudySetup
from agent_eval.tune.study_files import display_url, optuna_module

TUNE = "Tuning"


SPACE_HELP = "YAML of the settings to search: float or int ranges, or categorical choices."
OBJECTIVE_HELP = (
    "A summary.json metric to optimise, METRIC[:max|:min]; give two or more for a Pareto front. "
    "Default: quality.accuracy:max."
)
CONFIRM_HELP = "Then play the best settings on the whole dataset, beside their subset score."


def _tuning(help: str, *names: str, **more: Any) -> Any:
    return typer.Option(*names, help=help, rich_help_panel=TUNE, **more)


def tune_command(
    ctx: typer.Context,
    space: Annotated[Path, _tuning(SPACE_HELP, "--space", "-s", show_default=False)],
    overrides: Annotated[list[str] | None, overrides_argument("eval.n_samples=4")] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="The base run config the trials change (configs/)."),
    ] = None,
    trials: Annotated[
        int, _tuning("Trials to finish, an earlier tune's in -o counted.", min=1)
    ] = 20,
    objective: Annotated[
        list[str] | None, _tuning(OBJECTIVE_HELP, "--objective", show_default=False)
    ] = None,
    subset: Annotated[
        int | None, _tuning("Each trial plays N samples drawn at random.", min=1)
    ] = None,
    confirm_best: Annotated[bool, _tuning(CONFIRM_HELP, "--confirm")] = False,
    sampler: Annotated[SamplerName, _tuning("tpe, random or nsga2.")] = "tpe",
    pruner: Annotated[
        PrunerName, _tuning("Stop hopeless trials: median, halving or none.")
    ] = "median",
    tune_seed: Annotated[int, _tuning("The sampler's seed.", "--tune-seed")] = 0,
    out: Annotated[
        Path | None,
        _tuning(
            "The tune directory; the same one again continues it.",
            "--out",
            "-o",
            show_default=False,
        ),
    ] = None,
    agent: Annotated[str | None, option("agent")] = None,
    dataset: Annotated[str | None, option("dataset")] = None,
    data_file: Annotated[Path | None, option("data_file")] = None,
    limit: Annotated[int | None, option("limit")] = None,
    n_samples: Annotated[int | None, option("n_samples")] = None,
    concurrency: Annotated[int | None, option("concurrency")] = None,
    backend: Annotated[str | None, option("backend", WHAT)] = None,
    model: Annotated[str | None, option("model")] = None,
    endpoint: Annotated[list[str] | None, option("endpoint")] = None,
) -> None:
    """Search settings for the best score: each trial a real run, pruned when hopeless.

    Writes best.yaml (pareto-N.yaml for several objectives): run configs for `run --config`.
    Ctrl-C, then the same command again, continues the study.
    """
    guarded(ctx, optuna_module)  # without the [tune] extra, say so before anything else
    base = guarded(ctx, load_run_config, config, settings_given(ctx), overrides or [], True)
    searched = guarded(ctx, SearchSpace.load, space)
    objectives = guarded(ctx, parse_objectives, objective or [], base.eval.k_values())
    tune_dir = out or default_run_dir(f"tune-{base.agent.name}")
    setup = StudySetup(tune_dir, objectives, searched, subset, sampler, pruner, tune_seed)
    job = Tune(base, setup, trials)
    guarded(ctx, check_space, job)
    view = ConsoleTune(console, objectives, trials)
    _print_setup(job)
    finished = guarded(ctx, run_until_signalled, _tuned(job, view, confirm_best))
    if finished is None:
        _interrupted(job)
    chosen, confirmations = finished
    _finished(job, chosen, confirmations, _report(ctx, job))


async def _tuned(
    job: Tune, view: ConsoleTune, confirm_best: bool
) -> tuple[list[Chosen], list[Confirmation]]:
    async with Tuner(job, view) as tuner:
        await tuner.search()
        chosen = choose(tuner)
        confirmations = await confirm(tuner, chosen) if confirm_best else []
        return chosen, confirmations


def _print_setup(job: Tune) -> None:
    setup = job.setup
    keys = ", ".join(setup.space.dimensions)
    goals = ", ".join(f"{o.metric} {o.arrow}" for o in setup.objectives)
    on = f"a {setup.subset}-sample subset" if setup.subset else "the whole dataset"
    console.print(
        Text(
            f"Tuning {keys} for {goals}: {job.trials} trials, each on {on} of "
            f"{job.base.dataset_name}. The study: {display_url(job.tune_dir)}",
            style="dim",
        ),
        soft_wrap=True,
    )


def _interrupted(job: Tune) -> NoReturn:
    err_console.print(
        Text.assemble(
            ("interrupted", "bold yellow"),
            f": the study and every trial's run are kept in {job.tune_dir}; "
            "the same command again continues it, the interrupted trial first.",
        ),
        soft_wrap=True,
    )
    raise typer.Exit(130)


def _report(ctx: typer.Context, job: Tune) -> Tuned:
    """The trials' table in the terminal, and the tune's page beside its study."""
    tuned = guarded(ctx, load_tune, job.tune_dir)
    page, target, notes = tune_report(tuned, None)
    print_notes(notes)
    written = guarded(ctx, write_page, target, page)
    console.print(Text(f"Report: {written}"), soft_wrap=True)
    return tuned


def _finished(
    job: Tune, chosen: list[Chosen], confirmations: list[Confirmation], tuned: Tuned
) -> None:
    if not chosen:
        fail(f"no trial finished with a score; their runs and reasons are in {job.tune_dir}")
    for choice in chosen:
        console.print(Text(f"trial {choice.trial.number}: {choice.path}"), soft_wrap=True)
    for confirmation in confirmations:
        console.print(Text(confirmation_line(confirmation, job)), soft_wrap=True)
    for confirmed in tuned.confirmations:
        for score in confirmed.scores:
            console.print(Text(curse_sentence(score)), soft_wrap=True)
    console.print(
        Text(f"Play the best on the whole dataset: agent-eval run --config {chosen[0].path}"),
        soft_wrap=True,
    )
