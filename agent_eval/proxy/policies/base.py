"""The routing policy contract: one required method, hooks that default to nothing."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict

from agent_eval.proxy.fleet.worker import Worker

MAX_SESSION_KEY = 64


def session_key(sent: str | None) -> str | None:
    """A session id as the proxy keeps it: short printable ASCII as sent, anything else
    (long, non-ASCII, bytes that are not UTF-8) as its hash, so memory per session is bounded
    and every key can be hashed, logged and written."""
    if not sent:
        return None
    if len(sent) <= MAX_SESSION_KEY and sent.isascii() and sent.isprintable():
        return sent
    raw = sent.encode("utf-8", "surrogateescape")
    return "sha-" + hashlib.blake2b(raw, digest_size=16).hexdigest()


@dataclass(frozen=True)
class RequestInfo:
    """What a policy may know about a request."""

    route: str
    model: str | None = None
    session_key: str | None = None
    stream: bool = False
    detour_from: frozenset[str] = frozenset()
    """URLs already tried for this request; a retry going elsewhere is not a session move."""
    prefer: str | None = None
    """URL of the worker that holds this request's earlier turns, taken whenever it can be."""
    payload: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """The parsed request body, for policies that route by content; the others never read it."""


class NoSettings(BaseModel):
    """The settings of a policy that takes none."""

    model_config = ConfigDict(extra="forbid")


class Policy:
    """Chooses a worker among the candidates; None means none will do (the client gets 503)."""

    settings_model: ClassVar[type[BaseModel]] = NoSettings
    """The policy's settings, given under `proxy.policies.NAME`."""

    @classmethod
    def from_settings(cls, settings: Any) -> Self:
        """The policy with its settings, a `settings_model`; most take none."""
        return cls()

    def choose(self, workers: Sequence[Worker], info: RequestInfo) -> Worker | None:
        raise NotImplementedError

    def on_workers_changed(self, urls: Sequence[str]) -> None:
        """The pool gained or lost workers."""
