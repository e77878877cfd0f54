"""The open attempts: keys minted, calls admitted against their limits, records kept and taken.

Keys are looked up by their SHA-256 digest, so the lookup's timing tells nothing of a key,
and a key is never kept or logged in the clear: a short label of the digest stands for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import secrets
import time
from collections import OrderedDict

from aiohttp import web

from agent_eval.proxy.capture.attempt import Attempt, AttemptLimits, CallUsage
from agent_eval.proxy.capture.call import Call, PendingStream
from agent_eval.proxy.capture.settings import CaptureConfig
from agent_eval.proxy.errors import attempt_closed, attempt_limit_exceeded
from agent_eval.proxy.policies import session_key
from agent_eval.proxy.server.auth import ATTEMPT_KEY_PREFIX

log = logging.getLogger(__name__)


def key_digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).digest()


class AttemptStore:
    """Every open attempt, bounded in number and in the bytes their records hold."""

    def __init__(self, config: CaptureConfig) -> None:
        self.config = config
        self._open: dict[bytes, Attempt] = {}
        self._closed: OrderedDict[bytes, str] = OrderedDict()
        """Keys ended or expired and dropped, and which: a late call is told why (bounded)."""
        self.size = 0
        """Bytes of every open record."""
        self.origin: str | None = None
        """Where this process alone answers (`http://HOST:PORT`), when the proxy runs on several:
        an attempt's calls go there, to the process that holds its record."""

    def __len__(self) -> int:
        return len(self._open)

    def open(self, label: str, ttl: float | None, limits: AttemptLimits) -> tuple[str, Attempt]:
        """A new key and its attempt. Raises: OverflowError when max_open attempts are open."""
        if len(self._open) >= self.config.max_open:
            self._sweep()
            if len(self._open) >= self.config.max_open:
                raise OverflowError(self.config.max_open)
        key = ATTEMPT_KEY_PREFIX + secrets.token_urlsafe(24)
        digest = key_digest(key)
        ttl = ttl if ttl is not None else self.config.key_ttl
        attempt = Attempt(
            label=label,
            name=digest[:4].hex(),
            session=session_key(label),
            expires=time.monotonic() + ttl,
            expires_at=time.time() + ttl,
            limits=limits,
        )
        attempt.idle.set()
        self._open[digest] = attempt
        log.info("attempt %s (%s) opened for %g s", attempt.name, label, ttl)
        return key, attempt

    def find(self, key: str) -> Attempt | None:
        """The attempt of `key`, ended or not, while its record is held."""
        return self._open.get(key_digest(key))

    def usable(self, key: str) -> Attempt | web.Response:
        """The attempt whose calls `key` may make now, or the 401 that refuses it."""
        digest = key_digest(key)
        attempt = self._open.get(digest)
        if attempt is None:
            unknown = "unknown" if self.origin is None else "elsewhere"
            return attempt_closed(self._closed.get(digest, unknown))
        state = attempt.state(time.monotonic())
        return attempt if state == "open" else attempt_closed(state)

    def admit(self, key: str) -> Call | web.Response:
        """A call of `key`'s attempt, counted in flight; or the answer that refuses it."""
        attempt = self.usable(key)
        if isinstance(attempt, web.Response):
            return attempt
        if (over := self._over(attempt)) is not None:
            attempt.limit_exceeded = attempt.limit_exceeded or over
            attempt.refused += 1
            return attempt_limit_exceeded(over)
        attempt.calls += 1
        attempt.in_flight += 1
        attempt.idle.clear()
        call = Call(self.record, attempt, attempt.calls - 1, time.monotonic())
        attempt.flying[call.index] = call
        return call

    def record(self, call: Call, kept: bytes | PendingStream, size: int, usage: CallUsage) -> None:
        """Keep a finished call in its attempt's record, unless the record was taken."""
        attempt = call.attempt
        attempt.add(usage)
        attempt.flying.pop(call.index, None)
        if not attempt.closed:
            attempt.entries.append((call.index, kept))
            attempt.size += size
            self.size += size
        attempt.in_flight -= 1
        if attempt.in_flight == 0:
            attempt.idle.set()

    async def end(self, key: str) -> bytes | None:
        """End `key`'s attempt: no call is admitted after, those in flight are waited for
        (bounded); its whole record, then dropped. None for a key not held."""
        digest = key_digest(key)
        attempt = self._open.get(digest)
        if attempt is None:
            return None
        attempt.ended = True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.config.drain_timeout):
                await attempt.idle.wait()
        if self._open.pop(digest, None) is None:
            return None  # another DELETE of the same key took it while this one waited
        unfinished = attempt.in_flight
        record = attempt.record(unfinished)
        self._drop(digest, attempt, "ended")
        calls = attempt.calls
        log.info("attempt %s (%s) ended after %d call(s)", attempt.name, attempt.label, calls)
        return record

    def _over(self, attempt: Attempt) -> str | None:
        """The limit a new call of `attempt` would pass, if any."""
        limits, config = attempt.limits, self.config
        if limits.max_calls is not None and attempt.calls >= limits.max_calls:
            return "max_calls"
        if limits.max_tokens is not None and attempt.tokens >= limits.max_tokens:
            return "max_tokens"
        cost = attempt.cost()
        if limits.max_cost is not None and cost is not None and cost >= limits.max_cost:
            return "max_cost"
        if attempt.size >= config.max_record_bytes:
            return "max_record_bytes"
        if self.size >= config.max_total_bytes:
            return "max_total_bytes"
        return None

    def _sweep(self) -> None:
        """Drop the attempts that expired with no call in flight, records and all."""
        now = time.monotonic()
        for digest, attempt in list(self._open.items()):
            if now >= attempt.expires and attempt.in_flight == 0:
                del self._open[digest]
                self._drop(digest, attempt, "expired")
                log.info("attempt %s (%s) expired, its record dropped", attempt.name, attempt.label)

    def _drop(self, digest: bytes, attempt: Attempt, why: str) -> None:
        attempt.closed = True
        self.size -= attempt.size
        attempt.entries.clear()
        self._closed[digest] = why
        while len(self._closed) > self.config.max_open:
            self._closed.popitem(last=False)
