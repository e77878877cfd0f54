"""One engine process: plays its share of the attempts, writing each record as a stdout line.

`python -m agent_eval.run.shards.child` reads its ShardJob from stdin; the parent, the only
writer of samples.jsonl, appends the lines it reads.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from typing import IO

from agent_eval.proxy.server.auth import load_admin_token
from agent_eval.results.record import AttemptRecord
from agent_eval.run.parts import dataset_items
from agent_eval.run.shards.job import ShardJob, share
from agent_eval.run.shards.playing import shard_engine
from agent_eval.system.credentials import NO_KEY, environment_keys
from agent_eval.system.lifecycle import run_child_main


class LineSink:
    """Records as JSON lines on the pipe to the parent."""

    def __init__(self, out: IO[bytes]) -> None:
        self._out = out

    async def append(self, record: AttemptRecord) -> None:
        # A full pipe blocks here: the parent is behind, and waiting is the right backpressure.
        self._out.write(record.to_line())
        self._out.flush()


async def play(job: ShardJob, out: IO[bytes]) -> None:
    """Play the job's share against the served model, each record a line on `out`."""
    config = job.config
    key = environment_keys()["api_key"] or NO_KEY
    token = await asyncio.to_thread(load_admin_token, config.run_dir)
    async with shard_engine(config, job.base_url, job.model, key, token) as engine:
        items = share(dataset_items(config, job.limit), job.index, job.shards)
        await engine.play(items, frozenset(job.done), LineSink(out))


def main() -> None:
    job = ShardJob.model_validate_json(sys.stdin.buffer.read())
    # The record stream gets the real stdout; anything a library prints goes to the log.
    records = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    run_child_main(play(job, records))


if __name__ == "__main__":
    main()
