"""The parent's side: start the engine processes, play its own share, append what they send."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterable
from pathlib import Path

from agent_eval.data import Item
from agent_eval.errors import AgentEvalError
from agent_eval.results.files import RunDirectory
from agent_eval.results.record import AttemptRecord
from agent_eval.run.engine import Engine
from agent_eval.run.shards.job import ShardJob
from agent_eval.system.children import dying_with_parent, stop_groups
from agent_eval.system.credentials import child_environment
from agent_eval.system.diagnostics import log_tail, open_to_append

STOP_GRACE = 10.0
# The longest record line read from an engine process; a trajectory is far shorter.
MAX_LINE = 1 << 30


class EngineProcessError(AgentEvalError):
    """An engine process ended before its share was played."""


async def play_in_processes(
    engine: Engine,
    own: Iterable[Item],
    done: set[tuple[str, int]],
    jobs: list[ShardJob],
    run_dir: RunDirectory,
    api_key: str,
) -> None:
    """Play `own` here and each job in its own process; every record lands in `run_dir`."""
    logs = [run_dir.path / f"engine-{job.index}.log" for job in jobs]
    processes: list[asyncio.subprocess.Process] = []
    try:
        for job, log in zip(jobs, logs, strict=True):
            processes.append(await _spawn(job, log, api_key))
        async with asyncio.TaskGroup() as group:
            group.create_task(engine.play(own, done, run_dir))
            for job, process, log in zip(jobs, processes, logs, strict=True):
                group.create_task(_collect(process, job.index, log, engine, run_dir))
    finally:
        await stop_groups(processes, STOP_GRACE)


async def _spawn(job: ShardJob, log: Path, api_key: str) -> asyncio.subprocess.Process:
    env = child_environment({"api_key": api_key})
    argv, preexec = dying_with_parent([sys.executable, "-m", "agent_eval.run.shards.child"])
    with open_to_append(log) as log_file:
        process = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=log_file,
            env=env, start_new_session=True, preexec_fn=preexec, limit=MAX_LINE,
        )  # fmt: skip
    assert process.stdin is not None
    process.stdin.write(job.model_dump_json().encode())
    await process.stdin.drain()
    process.stdin.close()
    return process


async def _collect(
    process: asyncio.subprocess.Process,
    index: int,
    log: Path,
    engine: Engine,
    run_dir: RunDirectory,
) -> None:
    """Append each record line the process sends; raises when it stops short."""
    assert process.stdout is not None
    while line := await process.stdout.readline():
        if not line.endswith(b"\n"):
            break  # a process killed mid-write: the attempt is played again on resume
        record = AttemptRecord.from_line(line, f"engine process {index}'s output")
        # The line as the process wrote it: parsed to be counted, not written a second time.
        await run_dir.append_line(line)
        engine.count(record)
        if engine.stopping:
            # Over the unscored budget: no process starts another attempt. Those in flight
            # are lost with it and played on resume.
            await stop_groups([process], STOP_GRACE)
            return
    code = await process.wait()
    if code != 0:
        raise EngineProcessError(
            f"engine process {index} exited with code {code} before its share was played; "
            f"its log ({log}) ends with:\n{log_tail(log)}\n"
            f"Finished attempts are kept: `agent-eval run --resume {run_dir.path}` plays the rest."
        )
