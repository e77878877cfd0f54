"""The `agent-eval` command line: run, serve, workers, report, rescore, export, watch, tune,
view, ctl, perturb."""

from __future__ import annotations

from typing import Annotated

import typer

from agent_eval.cli.common import err_console
from agent_eval.cli.lazy import lazy_group
from agent_eval.shims.typer_help import show_flags_without_a_value
from agent_eval.system.lifecycle import setup_logging

show_flags_without_a_value()

COMMANDS = {
    "report": "agent_eval.cli.report:report",
    "rescore": "agent_eval.cli.rescore:rescore_command",
    "export": "agent_eval.cli.export:export",
    "run": "agent_eval.cli.run:run",
    "serve": "agent_eval.cli.serve:serve",
    "view": "agent_eval.cli.view:view",
    "ctl": "agent_eval.cli.ctl:ctl",
    "watch": "agent_eval.cli.watch:watch_command",
    "tune": "agent_eval.cli.tune:tune_command",
    "perturb": "agent_eval.cli.perturb:perturb_command",
    "workers": "agent_eval.cli.serve:workers",
}
"""Each command, in the order help lists them, and where it lives: imported when it runs."""

app = typer.Typer(
    cls=lazy_group(COMMANDS),
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
