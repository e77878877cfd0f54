"""Per-attempt keys on the engine's side: a key of the proxy's for each play of an attempt,
whose record, taken when the play ends however it ends, becomes the play's trajectory."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import aiohttp

from agent_eval.agents.base import uses_attempt_keys
from agent_eval.agents.captured import (
    CapturedCall,
    calls_of,
    infra_failure,
    trajectory_from_calls,
)
from agent_eval.agents.trajectory import Trajectory, TrajectoryError
from agent_eval.failures import FailureClass
from agent_eval.proxy.attempt_client import AttemptClient, OpenedAttempt
from agent_eval.run.config import RunConfig
from agent_eval.run.limits import PROXY_NAMES, Limits

log = logging.getLogger(__name__)

KEY_SLACK = 60.0
"""Seconds a key lives past its play's timeout."""
_PROBLEMS = (aiohttp.ClientError, TimeoutError, ValueError, KeyError, TypeError)
"""What asking the proxy can raise: no answer, an error status, a body of another shape."""


class KeyUnavailable(Exception):
    """The proxy gave no key for a play; the message says why."""


@dataclass
class KeyedPlay:
    """One play's key, then the calls its record held, or why the record could not be had."""

    opened: OpenedAttempt
    calls: list[CapturedCall] = field(default_factory=list)
    problem: str | None = None
    limit: str | None = None
    """The limit of the attempt's key its calls went past, as the record names it."""
    limits: Limits = field(default_factory=Limits)
    """The limits the key was opened with."""

    def trajectory(self, played: Trajectory) -> Trajectory:
        """The runner's trajectory with the calls, conversation and tool calls the proxy
        recorded; its final output stays the runner's, and its error too, unless a call
        failed through the infrastructure's fault before: then the play failed of that."""
        if self.problem is not None and played.error is None:
            played.error = TrajectoryError("connection_error", self.problem)
            played.final_output = None
        if played.error is not None and played.error.limit is None and self.limit is not None:
            # Refused past a limit, the program failed of it: the model's spending, not a fault.
            played.error = _refused(self.limit, self.limits, played.error)
        if not self.calls:
            return _without_model(played) if self.limit is None else played
        if played.error is not None and (cause := infra_failure(self.calls)) is not None:
            cause.message += f"; the play then ended in {played.error.kind}: {played.error.message}"
            played.error = cause
        captured = trajectory_from_calls(self.calls)
        played.messages, played.tool_calls = captured.messages, captured.tool_calls
        played.model_calls, played.setups = captured.model_calls, captured.setups
        return played


def _refused(limit: str, limits: Limits, error: TrajectoryError) -> TrajectoryError:
    """The error of a play whose call the proxy refused past `limit`, as its record names it
    (one of `limits`, or the proxy's own bound on a record's bytes)."""
    name = PROXY_NAMES.get(limit)
    setting, value = f"proxy.capture.{limit}", None
    if name is not None:
        setting, value = f"eval.limits.{name}", getattr(limits, name)
    setting += f"={value:g}" if value is not None else ""
    message = f"the proxy refused a model call past the attempt's {name or limit} limit "
    message += f"({setting}); the play then ended in {error.kind}: {error.message}"
    return TrajectoryError("limit_exceeded", message, limit=name or limit)


def _without_model(played: Trajectory) -> Trajectory:
    """A play that failed before its first model call failed of its setup (a program not
    found, a missing module, a wrong path), which says nothing of the model: infrastructure's.
    One stopped past an eval.limits time limit spent the time it was given: still its own."""
    error = played.error
    if error is not None and error.whose is FailureClass.MODEL and error.limit is None:
        message = f"the agent ended before its first model call ({error.kind}: {error.message})"
        played.error = TrajectoryError("no_model_call", message)
    return played


class AttemptKeys:
    """Opens a key per play and takes its record after, on one proxy."""

    def __init__(self, client: AttemptClient, ttl_s: float, everyone: bool, limits: Limits) -> None:
        """`everyone`: every runner's plays get keys (`eval.capture`), not only those that
        ask (`uses_attempt_keys`)."""
        self._client = client
        self._ttl = ttl_s
        self._everyone = everyone
        self._limits = limits

    def wanted(self, runner: object) -> bool:
        return self._everyone or uses_attempt_keys(runner)

    @contextlib.asynccontextmanager
    async def play(self, session_id: str) -> AsyncIterator[KeyedPlay]:
        """A key for the play inside the block; ended on every way out (an error, a timeout,
        Ctrl-C), its record then in the KeyedPlay. Raises: KeyUnavailable."""
        try:
            opened = await self._open(session_id)
        except _PROBLEMS as exc:
            raise KeyUnavailable(f"the proxy opened no key for the attempt ({exc!r})") from None
        keyed = KeyedPlay(opened, limits=self._limits)
        try:
            yield keyed
        finally:
            await self._take(keyed)

    async def _open(self, session_id: str) -> OpenedAttempt:
        """A new key; shielded, because a cancellation (Ctrl-C) while the proxy mints it would
        leave the key open in the proxy with no one to end it: such a key is ended at once."""
        limits = self._limits
        opening = asyncio.ensure_future(
            self._client.open(
                session_id, self._ttl, limits.model_calls, limits.tokens, limits.cost, limits.price
            )
        )
        try:
            return await asyncio.shield(opening)
        except asyncio.CancelledError:
            with contextlib.suppress(*_PROBLEMS):
                await self._client.end((await opening).key)
            raise

    async def waited(self, opened: OpenedAttempt) -> float:
        """Seconds the calls of `opened` waited in the proxy for a free worker so far; 0 when
        its record cannot be read."""
        try:
            record = await self._client.read(opened.key)
            return float(record.get("waited_s") or 0.0)
        except _PROBLEMS as exc:
            log.warning("the waits of %s could not be read (%r)", opened.attempt_base_url, exc)
            return 0.0

    async def _take(self, keyed: KeyedPlay) -> None:
        try:
            record = await self._client.end(keyed.opened.key)
            keyed.calls, keyed.limit = calls_of(record), record.get("limit_exceeded")
        except _PROBLEMS as exc:  # a body of another shape too: ValidationError is a ValueError
            keyed.problem = f"the proxy's record of the attempt could not be taken ({exc!r})"
            log.warning("%s", keyed.problem)


@contextlib.asynccontextmanager
async def attempt_keys(
    base_url: str,
    admin_token: str,
    ttl_s: float,
    everyone: bool,
    limits: Limits | None = None,
) -> AsyncIterator[AttemptKeys]:
    """Attempt keys of the proxy at `base_url` inside the block."""
    # Ending an attempt waits for its calls in flight: a long but bounded answer.
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(timeout=timeout) as http:
        client = AttemptClient(http, base_url, admin_token)
        yield AttemptKeys(client, ttl_s, everyone, limits or Limits())


def engine_keys(
    config: RunConfig, base_url: str, admin_token: str | None, limits: Limits
) -> contextlib.AbstractAsyncContextManager[AttemptKeys | None]:
    """The run's attempt keys on the proxy at `base_url`, opened with `limits`; None without
    its admin token."""
    if admin_token is None:
        return contextlib.nullcontext(None)
    # A key outlives its play's timeout, so that the play's end, not the key's, stops it.
    ttl = config.eval.attempt_timeout + KEY_SLACK
    return attempt_keys(base_url, admin_token, ttl, config.eval.capture, limits)
