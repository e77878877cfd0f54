"""Attempts played by several engine processes, for runs one process cannot keep up with."""

from agent_eval.run.shards.job import shard_of, share
from agent_eval.run.shards.parent import play_in_processes

__all__ = ["play_in_processes", "shard_of", "share"]
