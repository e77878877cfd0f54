"""The data package's one error: a dataset that cannot be found or read, with the next step."""

from __future__ import annotations

from agent_eval.errors import ConfigError


class DataError(ConfigError):
    """A dataset name, file or row the user gave cannot be used; the message says where and why."""
