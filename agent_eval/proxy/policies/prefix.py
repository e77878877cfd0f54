"""Prefix-cache-aware routing: a request goes to the worker that already holds most of its text.

The routing text is the whole conversation the worker will prefill (tools, every message),
not its first message, which a shared system prompt would make the same for everyone. Each
worker remembers the chunk chains routed to it (prefix_chain); a request goes to the longest
match when it covers cache_threshold of its text, else to the least loaded worker. Load comes
first: when the busiest worker is far ahead of the idlest, every request goes to the least
loaded, and no worker takes a request for its cache that would carry it past
ceil(load_factor x average) requests in flight. With a session key, the session's worker
holds (SessionAffinity); the prefix only places a session that has none yet.

Each process of a proxy of several sees only its share of a conversation's turns, so there
(placement `ring`) a conversation without a session id is placed by its start instead: what
comes before its growing part, and that part up to its first user message, on the hash ring,
the first worker clockwise under a looser load bound (ring_load_factor). Every process places
it alike, turn after turn, while loads stay under the bound; sessions go by the ring of their
ids.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal, Self

import orjson
from pydantic import BaseModel, ConfigDict, Field, model_validator

from agent_eval.proxy.fleet.worker import Worker
from agent_eval.proxy.policies.base import Policy, RequestInfo
from agent_eval.proxy.policies.least_requests import fewest_in_flight
from agent_eval.proxy.policies.prefix_chain import PrefixSet, chunk_chain
from agent_eval.proxy.policies.ring import HashRing
from agent_eval.proxy.policies.session import SessionAffinity, SessionSettings

# The body fields a worker prefills, in its order; each conversation grows at the last one.
ROUTING_FIELDS = {
    "/v1/chat/completions": ("tools", "messages"),
    "/v1/completions": ("prompt",),
    "/v1/responses": ("tools", "instructions", "input"),
    "/v1/messages": ("tools", "system", "messages"),
}


class PrefixSettings(BaseModel):
    """The `prefix` policy's settings: matching, load bounds, and its sessions' stickiness."""

    model_config = ConfigDict(extra="forbid")

    cache_threshold: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="Share of a request's text a worker must hold for the request to go there "
        "for its cache; below it the request goes to the least loaded worker.",
    )
    balance_abs_threshold: int = Field(
        16,
        ge=0,
        description="With balance_rel_threshold: when the busiest worker has more than this many "
        "requests in flight beyond the idlest, every request goes to the least loaded.",
    )
    balance_rel_threshold: float = Field(
        1.5,
        ge=1.0,
        description="With balance_abs_threshold: ...and more than this many times its count.",
    )
    load_factor: float = Field(
        1.25,
        ge=1.0,
        description="No worker takes a request for its cache that would carry it past "
        "ceil(load_factor x average) requests in flight.",
    )
    max_bytes: int = Field(
        64 * 1024**2,
        ge=1024,
        description="Bytes of routed text remembered over all workers; the least recently used "
        "go first.",
    )
    chunk_bytes: int = Field(
        256,
        ge=16,
        le=65536,
        description="Text is matched in chunks of this many bytes; a shorter tail is not matched.",
    )

    placement: Literal["tree", "ring"] | None = Field(
        None,
        description="How a request without a session id is placed: tree (the worker holding "
        "most of its text, as this process routed it) or ring (by its conversation's start on "
        "the hash ring, under load_factor: the same in every proxy process). Default tree; ring "
        "with proxy.processes > 1.",
    )
    ring_load_factor: float = Field(
        2.0,
        ge=1.0,
        description="With placement ring, a conversation goes past its worker on the ring to the "
        "next only when that worker has ceil(ring_load_factor x average) requests in flight: "
        "looser than load_factor, as the ring alone leaves the busiest worker about 1.3 times "
        "the average, and each process counts only its own requests.",
    )
    start_chars: int = Field(
        2048,
        ge=1,
        description="With placement ring, a prompt sent as one text (/v1/completions) is placed "
        "by its first this many characters (or tokens).",
    )
    sessions: SessionSettings = Field(
        default_factory=SessionSettings,
        description="How a session id keeps its worker, as in the session policy.",
    )

    @model_validator(mode="after")
    def _room_for_a_chunk(self) -> Self:
        if self.max_bytes < self.chunk_bytes:
            raise ValueError(
                f"max_bytes ({self.max_bytes}) is smaller than chunk_bytes ({self.chunk_bytes}): "
                "nothing could be remembered; raise max_bytes or lower chunk_bytes"
            )
        return self


def routing_text(info: RequestInfo) -> bytes:
    """The request's conversation as JSON, its start shared with every earlier turn's."""
    return orjson.dumps([info.payload.get(name) for name in ROUTING_FIELDS.get(info.route, ())])


def conversation_start(info: RequestInfo, start_chars: int) -> bytes:
    """What every turn of the request's conversation starts with: the fields before its
    growing one, and that one up to its first user message (a text: its first characters)."""
    values = [info.payload.get(name) for name in ROUTING_FIELDS.get(info.route, ())]
    if values:
        values[-1] = _start_of(values[-1], start_chars)
    return orjson.dumps(values)


def _start_of(grown: Any, start_chars: int) -> Any:
    if isinstance(grown, str):
        return grown[:start_chars]
    if not isinstance(grown, list):
        return grown
    if not all(isinstance(item, dict) for item in grown):
        return grown[:start_chars]  # token ids
    users = (i for i, item in enumerate(grown) if item.get("role") == "user")
    return grown[: next(users, 0) + 1]


class PrefixAware(Policy):
    settings_model = PrefixSettings

    def __init__(self, settings: PrefixSettings | None = None) -> None:
        self.settings = settings or PrefixSettings()
        self._sessions = SessionAffinity.from_settings(self.settings.sessions)
        self._held: dict[str, PrefixSet] = {}
        self._by_ring = self.settings.placement == "ring"
        self._ring = HashRing()

    @classmethod
    def from_settings(cls, settings: PrefixSettings) -> Self:
        return cls(settings)

    def on_workers_changed(self, urls: Sequence[str]) -> None:
        self._sessions.on_workers_changed(urls)
        self._ring.rebuild(urls)
        settings = self.settings
        capacity = settings.max_bytes // settings.chunk_bytes // max(len(urls), 1)
        kept = self._held
        self._held = {url: kept[url] if url in kept else PrefixSet(capacity) for url in urls}
        for held in self._held.values():
            held.resize(capacity)

    def choose(self, workers: Sequence[Worker], info: RequestInfo) -> Worker | None:
        if not workers:
            return None
        if self._by_ring:
            return self._on_ring(workers, info)
        text = routing_text(info)
        chain = chunk_chain(text, self.settings.chunk_bytes)
        key = info.session_key
        if key is not None and self._sessions.holds(key):
            worker = self._sessions.choose(workers, info)
        else:
            worker = self._by_prefix(workers, info, chain, len(text))
            if key is not None and worker is not None:
                self._sessions.pin(key, worker.url)
        if worker is not None and (held := self._held.get(worker.url)) is not None:
            held.add(chain)
        return worker

    def held_bytes(self, url: str) -> int:
        """Bytes of routed text remembered for a worker."""
        held = self._held.get(url)
        return len(held) * self.settings.chunk_bytes if held is not None else 0

    def _on_ring(self, workers: Sequence[Worker], info: RequestInfo) -> Worker | None:
        """A session by its id's place; anything else by its conversation's start, the first
        worker clockwise with room under the load bound."""
        if info.session_key is not None:
            return self._sessions.choose(workers, info)
        if info.detour_from:
            workers = [w for w in workers if w.url not in info.detour_from] or workers
        by_url = {w.url: w for w in workers}
        bound = self._load_bound(workers, self.settings.ring_load_factor)
        start = conversation_start(info, self.settings.start_chars)
        for url in self._ring.clockwise(start):
            worker = by_url.get(url)
            if worker is not None and worker.in_flight < bound:
                return worker
        return fewest_in_flight(workers)

    def _load_bound(self, workers: Sequence[Worker], factor: float | None = None) -> int:
        """Requests in flight a worker may have to take one more for its cache."""
        total = sum(w.in_flight for w in workers)
        # The average counts this request, so a worker at the bound has no room for it.
        return math.ceil((factor or self.settings.load_factor) * (total + 1) / len(workers))

    def _by_prefix(
        self, workers: Sequence[Worker], info: RequestInfo, chain: list[int], length: int
    ) -> Worker | None:
        if info.detour_from:
            workers = [w for w in workers if w.url not in info.detour_from] or workers
        if not chain or self._imbalanced(workers):
            return fewest_in_flight(workers)
        best, matched = self._longest_match(workers, chain)
        if matched * self.settings.chunk_bytes < self.settings.cache_threshold * length:
            best = []
        return fewest_in_flight(best or workers)

    def _longest_match(
        self, workers: Sequence[Worker], chain: list[int]
    ) -> tuple[list[Worker], int]:
        """The workers with room under the load bound that hold the most of the chain; how much."""
        bound = self._load_bound(workers)
        best: list[Worker] = []
        matched = 0
        for worker in workers:
            held = self._held.get(worker.url)
            if held is None or worker.in_flight >= bound:
                continue
            n = held.match(chain)
            if n > matched:
                best, matched = [worker], n
            elif n == matched and n:
                best.append(worker)
        return best, matched

    def _imbalanced(self, workers: Sequence[Worker]) -> bool:
        loads = [w.in_flight for w in workers]
        busiest, idlest = max(loads), min(loads)
        settings = self.settings
        return (
            busiest - idlest > settings.balance_abs_threshold
            and busiest > settings.balance_rel_threshold * idlest
        )
