"""Sticky sessions by consistent hashing with bounded loads.

One conversation stays on one worker so its prefix cache is reused. No worker holds
more than ceil(c * average) live sessions (Mirrokni, Thorup and Zadimoghaddam, 2018).
Sessions that ended still count until their TTL, which loosens that bound; a new
session therefore goes, among the workers under it, to one with the fewest requests in
flight, and new work fills idle workers first. Ties go to the first clockwise from the key's
hash on a ring of virtual nodes, so an idle pool places a key the same way in every
proxy. With placement `ring` (the proxy on several processes) the ring alone places a session,
with no bound: each process counts only the sessions it saw, so bounds drawn from those counts
would place one session differently in each. A session moves only when its worker stops being a
candidate or is over the bound.
"""

from __future__ import annotations

import bisect
import hashlib
import math
import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field

from agent_eval.proxy.fleet.worker import Worker
from agent_eval.proxy.policies.base import Policy, RequestInfo
from agent_eval.proxy.policies.least_requests import fewest_in_flight

VIRTUAL_NODES = 64


class SessionSettings(BaseModel):
    """The `session` policy's settings: how sessions are bounded per worker and remembered."""

    model_config = ConfigDict(extra="forbid")

    balance_factor: float = Field(
        1.25,
        ge=1.0,
        description="No worker holds more than ceil(c * average) live sessions; among those "
        "under it, a new session goes to one with the fewest requests in flight.",
    )
    ttl: float = Field(
        600.0, gt=0, description="Seconds after its last request that a session stops counting."
    )
    max_sessions: int = Field(
        100_000, ge=1, description="Sessions remembered at most; the least recently used go first."
    )
    placement: Literal["idlest", "ring"] | None = Field(
        None,
        description="Where a new session goes among the workers under the bound: idlest (fewest "
        "requests in flight, ties on the hash ring) or ring (first clockwise from the session's "
        "hash, no bound: the same in every proxy process). Default idlest; ring with "
        "proxy.processes > 1.",
    )


def ring_hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


@dataclass
class _Session:
    url: str
    last_seen: float


class SessionAffinity(Policy):
    settings_model = SessionSettings

    def __init__(
        self,
        balance_factor: float = 1.25,
        ttl: float = 600.0,
        max_sessions: int = 100_000,
        clock: Callable[[], float] = time.monotonic,
        placement: Literal["idlest", "ring"] | None = None,
    ) -> None:
        self._by_ring = placement == "ring"
        self._factor = balance_factor
        self._ttl = ttl
        self._max_sessions = max_sessions
        self._clock = clock
        self._ring: list[tuple[int, str]] = []
        self._points: list[int] = []
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._load: dict[str, int] = {}

    @classmethod
    def from_settings(cls, settings: SessionSettings) -> Self:
        return cls(
            settings.balance_factor,
            settings.ttl,
            settings.max_sessions,
            placement=settings.placement,
        )

    def on_workers_changed(self, urls: Sequence[str]) -> None:
        # Only new workers' points are hashed; the kept ones are one sorted run already, so
        # the sort merges two runs: one worker added to 1,000 costs milliseconds.
        wanted = set(urls)
        kept = [entry for entry in self._ring if entry[1] in wanted]
        placed = {url for _, url in kept}
        added = [
            (ring_hash(f"{url}#{i}"), url)
            for url in dict.fromkeys(urls)
            if url not in placed
            for i in range(VIRTUAL_NODES)
        ]
        self._ring = sorted(kept + added)
        self._points = [point for point, _ in self._ring]

    def choose(self, workers: Sequence[Worker], info: RequestInfo) -> Worker | None:
        if not workers:
            return None
        if info.session_key is None:
            return fewest_in_flight(workers)
        now = self._clock()
        self._expire(now)
        by_url = {w.url: w for w in workers}
        session = self._sessions.get(info.session_key)
        if session is not None:
            session.last_seen = now
            self._sessions.move_to_end(info.session_key)
            kept = self._keep(session, by_url, info)
            if kept is not None:
                return kept
        worker = self._place(info.session_key, by_url, moving=session is not None)
        if session is not None and session.url in info.detour_from:
            return worker  # a retry detours; the session stays where it lives
        self._assign(info.session_key, worker.url, now)
        return worker

    def holds(self, key: str) -> bool:
        """Whether a live session has this key, so its worker is already chosen."""
        self._expire(self._clock())
        return key in self._sessions

    def pin(self, key: str, url: str) -> None:
        """Place a session where another policy chose; it sticks there from now on."""
        self._assign(key, url, self._clock())

    def sessions_on(self, url: str) -> int:
        """Live sessions held by a worker."""
        return self._load.get(url, 0)

    def _keep(
        self, session: _Session, by_url: dict[str, Worker], info: RequestInfo
    ) -> Worker | None:
        worker = by_url.get(session.url)
        if worker is None:
            return None
        if self._load.get(session.url, 0) > self._bound(len(by_url), extra=0):
            return None
        return worker

    def _bound(self, n_workers: int, extra: int) -> int:
        if self._by_ring:
            return sys.maxsize
        live = len(self._sessions) + extra
        return max(1, math.ceil(self._factor * live / n_workers))

    def _place(self, key: str, by_url: dict[str, Worker], moving: bool) -> Worker:
        if self._by_ring:
            return self._first_on_ring(key, by_url)
        # A moving session is already counted among the live ones; a new one is not yet.
        bound = self._bound(len(by_url), extra=0 if moving else 1)
        load = self._load
        under = [w for w in by_url.values() if load.get(w.url, 0) < bound]
        # None is under it only when a session moves with c = 1 and every worker at the average.
        under = under or list(by_url.values())
        fewest = min(w.in_flight for w in under)
        idlest = [w for w in under if w.in_flight == fewest]
        if len(idlest) == 1:
            return idlest[0]
        return self._first_on_ring(key, {w.url: w for w in idlest})

    def _first_on_ring(self, key: str, candidates: dict[str, Worker]) -> Worker:
        """The first of the candidates clockwise from the key's hash."""
        start = bisect.bisect(self._points, ring_hash(key))
        for offset in range(len(self._ring)):
            worker = candidates.get(self._ring[(start + offset) % len(self._ring)][1])
            if worker is not None:
                return worker
        return next(iter(candidates.values()))  # none on the ring: only before the first change

    def _assign(self, key: str, url: str, now: float) -> None:
        old = self._sessions.get(key)
        if old is not None:
            self._load[old.url] -= 1
        self._sessions[key] = _Session(url, now)
        self._sessions.move_to_end(key)
        self._load[url] = self._load.get(url, 0) + 1
        if len(self._sessions) > self._max_sessions:
            _, oldest = self._sessions.popitem(last=False)
            self._load[oldest.url] -= 1

    def _expire(self, now: float) -> None:
        while self._sessions:
            key, oldest = next(iter(self._sessions.items()))
            if now - oldest.last_seen < self._ttl:
                return
            del self._sessions[key]
            self._load[oldest.url] -= 1
