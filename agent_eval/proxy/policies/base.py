"""The routing policy contract: one required method, hooks that default to nothing."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self, overload

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


class Candidates(Sequence[Worker]):
    """The workers a request may go to: how many and whether one of them has a URL, known
    without listing them; the list, in the pool's order, is built the first time it is read."""

    def __init__(
        self, count: int, find: Callable[[str], Worker | None], listing: Callable[[], list[Worker]]
    ) -> None:
        self._count = count
        self.get = find
        """The candidate with this URL, if there is one (the finder itself: no call between)."""
        self._listing = listing
        self._listed: list[Worker] | None = None

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Worker]:
        return iter(self._list())

    @overload
    def __getitem__(self, index: int) -> Worker: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Worker]: ...
    def __getitem__(self, index: int | slice) -> Worker | Sequence[Worker]:
        return self._list()[index]

    def _list(self) -> list[Worker]:
        if self._listed is None:
            self._listed = self._listing()
        return self._listed


def as_candidates(workers: Sequence[Worker]) -> Candidates:
    """The workers as Candidates: the pool's own as they are, a plain list indexed by URL (a
    URL listed twice counts once)."""
    if isinstance(workers, Candidates):
        return workers
    by_url = {w.url: w for w in workers}
    return Candidates(len(by_url), by_url.get, lambda: list(by_url.values()))


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
        """From the pool, `workers` are Candidates: `as_candidates(workers).get(url)` finds one
        by URL without a scan."""
        raise NotImplementedError

    def on_workers_changed(self, urls: Sequence[str]) -> None:
        """The pool gained or lost workers."""
