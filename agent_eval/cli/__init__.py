"""The `agent-eval` command line: run, serve, workers, report, rescore, export, watch, tune,
view, ctl, perturb."""

from __future__ import annotations

from typing import Annotated

import typer

from agent_eval.cli import ctl, export, perturb, report, rescore, run, serve, tune, view, watch
from agent_eval.cli.common import err_console
from agent_eval.shims.typer_help import show_flags_without_a_value
from agent_eval.system.lifecycle import setup_logging

show_flags_without_a_value()

app = typer.Typer(
    help="Evaluate tool-calling agents at scale behind one OpenAI-compatible router proxy.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def main(
    ctx: typer.Context,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks and debug logs.")] = False,
) -> None:
    """Evaluate tool-calling agents at scale behind one OpenAI-compatible router proxy."""
    setup_logging(err_console, debug)
    ctx.obj = debug


app.command()(report.report)
app.command("rescore")(rescore.rescore_command)
app.command()(export.export)
app.command()(run.run)
app.command()(serve.serve)
app.command()(view.view)
app.command()(ctl.ctl)
app.command("watch")(watch.watch_command)
app.command("tune")(tune.tune_command)
app.command("perturb")(perturb.perturb_command)
workers = typer.Typer(help="Launch inference workers without a proxy.", no_args_is_help=True)
workers.command("up")(serve.workers_up)
app.add_typer(workers, name="workers")
