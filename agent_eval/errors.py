"""The one exception family: every message is written for the user and says what to do next."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


class AgentEvalError(Exception):
    """Root of every error agent-eval raises on purpose."""

    exit_code = 2
    """The command's exit code when it ends on this error: 2, a mistake in what was asked."""


class ConfigError(AgentEvalError):
    """A setting the user gave is invalid."""


class ProxyStartError(AgentEvalError):
    """The proxy could not start (port taken, bad address)."""


class ProxyExitedError(AgentEvalError):
    """A proxy process of several exited while serving; its log says why."""

    exit_code = 1


class StorageError(AgentEvalError):
    """A file could not be written: its file system is full, over quota, read-only or failing."""

    exit_code = 4


def mistakes_only(group: BaseExceptionGroup) -> str | None:
    """The messages of a group of concurrent errors that are all AgentEvalErrors, joined; None
    when anything else is among them (a bug, to show as it is)."""
    mistakes, others = group.split(AgentEvalError)
    if mistakes is None or others is not None:
        return None
    return "; ".join(dict.fromkeys(str(exc) for exc in _leaves(mistakes)))


@contextlib.contextmanager
def first_storage_error() -> Iterator[None]:
    """Inside, StorageErrors raised by concurrent tasks come out as the first of them alone.

    Tasks that write to one full disk all fail the same way: one message says it.
    """
    try:
        yield
    except* StorageError as group:
        raise _leaves(group)[0] from None


def _leaves(group: BaseExceptionGroup) -> list[BaseException]:
    return [
        leaf
        for exc in group.exceptions
        for leaf in (_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    ]
