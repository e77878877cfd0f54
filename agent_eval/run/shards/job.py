"""What one engine process is given: the run's config, the served model, its share."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator

from pydantic import BaseModel, ConfigDict

from agent_eval.data import Item
from agent_eval.run.config import RunConfig

NEWS = b"@"
"""Starts an engine process's line that is news of the shard (control), not a record."""
MAX_LINE = 1 << 30
"""The longest line either end of the pipes reads: a record, the job, an order (a requeue's
attempts); a trajectory is far shorter."""


def shard_of(sample_id: str, shards: int) -> int:
    """The engine process that plays every attempt of a sample: a stable hash of its id."""
    digest = hashlib.blake2b(sample_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards


def share(items: Iterable[Item], index: int, shards: int) -> Iterator[Item]:
    """The items engine process `index` of `shards` plays, in their order."""
    return (item for item in items if shard_of(item.id, shards) == index)


class ShardJob(BaseModel):
    """Sent as JSON on the engine process's stdin."""

    model_config = ConfigDict(extra="forbid")

    config: RunConfig
    base_url: str
    model: str
    index: int
    shards: int
    limit: int | None
    done: list[tuple[str, int]]
    """Attempts already in the run directory (a resumed run), which it must not play again."""
