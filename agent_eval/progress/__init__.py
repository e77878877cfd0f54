"""The live terminal view of an evaluation run: progress, rates, accuracy, errors, workers."""

from agent_eval.progress.view import RunView

__all__ = ["RunView"]
