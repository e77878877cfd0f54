"""What the API says of a watch directory: its checkpoints, each with the runs of its step."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from aiohttp import web

from agent_eval.report.watching import Checkpointed, decision, load_watch
from agent_eval.view.catalog import Catalog
from agent_eval.view.runs import RunDir, status

KINDS = ("probe", "full")
"""The run folders `agent-eval watch` writes under each step-N."""


async def watch_body(catalog: Catalog, watch_id: str) -> dict[str, Any]:
    """The watch directory's status and checkpoints in step order; a 404 for any other id.

    Raises ConfigError when a line of decisions.jsonl is not a decision."""
    watch = await _watch_dir(catalog, watch_id)
    entries, folders, state = await asyncio.to_thread(_read, watch)
    return {
        "id": watch.id,
        "status": state,
        "checkpoints": [await _checkpoint(catalog, watch, entry, folders) for entry in entries],
    }


async def _watch_dir(catalog: Catalog, watch_id: str) -> RunDir:
    found = await catalog.run(watch_id)
    if found is None:
        raise web.HTTPNotFound(reason=f"no watch directory {watch_id!r} under the roots served")
    if found.kind != "watch":
        raise web.HTTPNotFound(
            reason=f"{watch_id!r} is a run, not a watch directory (no decisions.jsonl): "
            "open it as a run"
        )
    return found


def _read(watch: RunDir) -> tuple[list[Checkpointed], set[str], str]:
    """The checkpoints, which of their step-N/probe and step-N/full folders exist, the status."""
    entries = load_watch(watch.path)
    wanted = (_folder(entry.step, kind) for entry in entries for kind in KINDS)
    return entries, {folder for folder in wanted if (watch.path / folder).is_dir()}, status(watch)


async def _checkpoint(
    catalog: Catalog, watch: RunDir, entry: Checkpointed, folders: set[str]
) -> dict[str, Any]:
    runs = {
        kind: await _step_run(catalog, watch, _folder(entry.step, kind), folders) for kind in KINDS
    }
    return {
        "step": entry.step,
        # orjson writes an interval's NaN (nothing scored) as null.
        "probe": dataclasses.asdict(entry.probe),
        "change": entry.change,
        "against": entry.compared,
        "forecast": entry.forecast,
        "reason": entry.reason,
        "decision": decision(entry),
        "full": None if entry.full is None else dataclasses.asdict(entry.full),
        "probe_run": runs["probe"],
        "full_run": runs["full"],
    }


async def _step_run(catalog: Catalog, watch: RunDir, folder: str, folders: set[str]) -> str | None:
    """The id of a step's run, if the catalog finds it under the roots."""
    # Only folders on disk are looked up: a miss makes the catalog walk the roots again.
    if folder not in folders:
        return None
    found = await catalog.run(f"{watch.id}/{folder}")
    return found.id if found is not None and found.kind == "run" else None


def _folder(step: int, kind: str) -> str:
    return f"step-{step}/{kind}"
