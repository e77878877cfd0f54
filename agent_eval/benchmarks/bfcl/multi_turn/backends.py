"""Fresh instances of BFCL's executable backends for one attempt, or one check, alone.

BFCL's executor (`multi_turn_utils.execute_multi_turn_func_call`) keeps each backend instance
in its module's globals under `{model_name}_{test_entry_id}_{class}_instance`, and reuses the
instance whenever that name comes again. Two attempts at one entry would share one file
system, and a second check of an entry would start from the first one's end state. So every
attempt and every check names itself with a model name of its own (`owner`), and its
instances are deleted from those globals when it ends, which also keeps them from piling up.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from uuid import uuid4

from agent_eval.benchmarks.bfcl.multi_turn.guard import guarded
from agent_eval.benchmarks.bfcl.multi_turn.package import executor


@contextmanager
def own_instances() -> Iterator[str]:
    """A model name no other attempt or check uses; its backend instances go at the exit."""
    owner = f"agent_eval_{uuid4().hex}"
    try:
        yield owner
    finally:
        instances = vars(executor())
        for name in [name for name in instances if name.startswith(owner)]:
            del instances[name]


class Backends:
    """One attempt's backends: the entry's classes loaded with its initial config."""

    def __init__(self, owner: str, entry: dict[str, Any], long_context: bool) -> None:
        self.owner = owner
        self.entry_id = str(entry["id"])
        self.initial_config = entry.get("initial_config") or {}
        self.classes: list[str] = list(entry["involved_classes"])
        self.long_context = long_context

    def execute(self, calls: list[str]) -> list[str]:
        """Each call's result as BFCL's executor gives it (an error as its text)."""
        results, _ = executor().execute_multi_turn_func_call(
            guarded(calls, self.classes),
            self.initial_config,
            self.classes,
            self.owner,
            self.entry_id,
            long_context=self.long_context,
            is_evaL_run=False,
        )
        return list(results)
