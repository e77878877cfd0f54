"""The commands that install agent-eval's optional parts, as error messages give them."""

from __future__ import annotations


def extra(name: str) -> str:
    """The command that installs agent-eval's extra `name`."""
    return f"pip install 'agent-eval[{name}]'"


BFCL = f"{extra('bfcl')} && pip install --no-deps 'bfcl-eval==2026.3.23'"
"""BFCL's package comes without its dependencies (pyproject.toml's `bfcl` extra says why)."""

BENCHMARKS = {"bfcl": BFCL, "agentdojo": extra("agentdojo")}
"""Each benchmark's runner, reward and datasets are named after it and need this."""
