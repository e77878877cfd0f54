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

import math
import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field

from agent_eval.proxy.fleet.worker import Worker
from agent_eval.proxy.policies.base import Candidates, Policy, RequestInfo, as_candidates
from agent_eval.proxy.policies.least_requests import fewest_in_flight
from agent_eval.proxy.policies.ring import HashRing


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
        self._ring = HashRing()
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
        self._ring.rebuild(urls)

    def choose(self, workers: Sequence[Worker], info: RequestInfo) -> Worker | None:
        if not workers:
            return None
        if info.session_key is None:
            return fewest_in_flight(workers)
        now = self._clock()
        self._expire(now)
        candidates = as_candidates(workers)
        session = self._sessions.get(info.session_key)
        if session is not None:
            session.last_seen = now
            self._sessions.move_to_end(info.session_key)
            kept = self._keep(session, candidates)
            if kept is not None:
                return kept
        worker = self._place(info.session_key, candidates, moving=session is not None)
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

    def _keep(self, session: _Session, candidates: Candidates) -> Worker | None:
        worker = candidates.get(session.url)
        if worker is None:
            return None
        if self._load.get(session.url, 0) > self._bound(len(candidates), extra=0):
            return None
        return worker

    def _bound(self, n_workers: int, extra: int) -> int:
        if self._by_ring:
            return sys.maxsize
        live = len(self._sessions) + extra
        return max(1, math.ceil(self._factor * live / n_workers))

    def _place(self, key: str, candidates: Candidates, moving: bool) -> Worker:
        if self._by_ring:
            return self._ring.first(key, candidates)
        # A moving session is already counted among the live ones; a new one is not yet.
        bound = self._bound(len(candidates), extra=0 if moving else 1)
        load = self._load
        under = [w for w in candidates if load.get(w.url, 0) < bound]
        # None is under it only when a session moves with c = 1 and every worker at the average.
        under = under or list(candidates)
        fewest = min(w.in_flight for w in under)
        idlest = [w for w in under if w.in_flight == fewest]
        if len(idlest) == 1:
            return idlest[0]
        return self._ring.first(key, as_candidates(idlest))

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
