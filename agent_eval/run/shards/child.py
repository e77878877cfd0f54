"""One engine process: plays its share of the attempts, writing each record as a stdout line.

`python -m agent_eval.run.shards.child` reads its ShardJob as the first line of stdin, then
control orders, one a line, until stdin closes; the parent, the only writer of samples.jsonl,
appends the record lines it reads and takes the lines starting with NEWS as the shard's news.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Iterator
from typing import IO

from agent_eval.data import Item
from agent_eval.proxy.server.auth import load_admin_token
from agent_eval.results.record import AttemptRecord
from agent_eval.run.control.shard import News, Order, ShardSide, ShardState
from agent_eval.run.parts import dataset_items
from agent_eval.run.shards.job import MAX_LINE, NEWS, ShardJob, share
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

    def tell(self, news: News) -> None:
        """A news line: written whole between two records (one thread writes both)."""
        self._out.write(NEWS + news.model_dump_json().encode() + b"\n")
        self._out.flush()


async def play(job: ShardJob, orders: asyncio.StreamReader, out: IO[bytes]) -> None:
    """Play the job's share against the served model, each record a line on `out`; carry out
    the orders read until they end, then finish what plays."""
    config = job.config
    key = environment_keys()["api_key"] or NO_KEY
    token = await asyncio.to_thread(load_admin_token, config.run_dir)
    sink = LineSink(out)

    def idle(state: ShardState) -> None:
        sink.tell(News(reply=False, state=state))

    async with shard_engine(config, job.base_url, job.model, key, token) as engine:

        def mine() -> Iterator[Item]:
            return share(dataset_items(config, job.limit), job.index, job.shards)

        side = ShardSide(engine, mine, sink, idle)
        side.play(mine(), frozenset(job.done))
        taking = asyncio.ensure_future(_take(orders, side, sink))
        try:
            failing = asyncio.ensure_future(side.failed.wait())
            await asyncio.wait({taking, failing}, return_when=asyncio.FIRST_COMPLETED)
            failing.cancel()
            if taking.done():
                taking.result()
            await side.wait()
        finally:
            taking.cancel()
            await side.stop()


async def _take(orders: asyncio.StreamReader, side: ShardSide, sink: LineSink) -> None:
    while line := await orders.readline():
        state = await side.order(Order.model_validate_json(line))
        sink.tell(News(reply=True, state=state))


async def serve(out: IO[bytes]) -> None:
    """The job from stdin's first line, then its play with the orders that follow."""
    reader = asyncio.StreamReader(limit=MAX_LINE)
    loop = asyncio.get_running_loop()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    job = ShardJob.model_validate_json(await reader.readline())
    await play(job, reader, out)


def main() -> None:
    # The record stream gets the real stdout; anything a library prints goes to the log.
    records = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    run_child_main(serve(records))


if __name__ == "__main__":
    main()
