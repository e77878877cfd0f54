"""`python -m agent_eval` runs the command line."""

from agent_eval.cli import app

app(prog_name="agent-eval")
