"""Per-attempt limits (eval.limits) on the engine's side: an attempt past one is stopped where it
is and ends as limit_exceeded, the model's failure, its trajectory kept up to there.

Time limits move the attempt's deadline: working time is wall time less the seconds its model
calls waited in the proxy for a free worker, so its deadline moves on as waits are learned.
Calls, tokens and cost are checked before each model call an in-process runner makes (the
trajectory so far; the call is not sent) and at the attempt's end; the proxy refuses a keyed
program's calls past them itself.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass

import httpx2
import openai

from agent_eval.agents.trajectory import Trajectory, TrajectoryError
from agent_eval.proxy.capture.attempt import Price
from agent_eval.shims.openai_hooks import add_request_hook, add_response_hook
from agent_eval.wire import WAITED_HEADER, waited_seconds

SPENDING = ("model_calls", "tokens", "cost")
"""The limits on what an attempt's model calls use, in the order they are checked."""
PROXY_NAMES = {"max_calls": "model_calls", "max_tokens": "tokens", "max_cost": "cost"}
"""The proxy's names of an attempt key's limits, as eval.limits names them."""


@dataclass(frozen=True)
class Limits:
    """An attempt's limits (eval.limits); None: no limit. `price` prices tokens for `cost`."""

    wall_time: float | None = None
    working_time: float | None = None
    tokens: int | None = None
    model_calls: int | None = None
    cost: float | None = None
    price: Price | None = None

    def spending_over(self, trajectory: Trajectory, calling: bool) -> str | None:
        """The limit `trajectory`'s calls went past; `calling`: or that one more call would
        (any call uses a token, so one at the limit would pass it)."""
        spent = self.spent(trajectory)
        for name in SPENDING:
            limit, used = getattr(self, name), spent.get(name)
            if limit is None or used is None:
                continue
            if used >= limit if calling else used > limit:
                return name
        return None

    def spent(self, trajectory: Trajectory) -> dict[str, float]:
        """What the trajectory used of each limit on spending; its cost only when priced."""
        prompt, completion = trajectory.prompt_tokens, trajectory.completion_tokens
        used: dict[str, float] = {"model_calls": len(trajectory.model_calls)}
        used["tokens"] = prompt + completion
        if self.price is not None:
            used["cost"] = self.price.of(prompt, completion)
        return used

    def exceeded(self, name: str, trajectory: Trajectory) -> TrajectoryError:
        """The error of an attempt past the limit `name`, with what it spent."""
        used = self.spent(trajectory)
        spent = f"{used['model_calls']:g} model call(s), {used['tokens']:g} tokens"
        spent += f", cost {used['cost']:.6g}" if "cost" in used else ""
        message = f"the attempt went past its {name} limit (eval.limits.{name}="
        message += f"{getattr(self, name):g}); it used {spent}"
        return TrajectoryError("limit_exceeded", message, limit=name)

    @property
    def timed(self) -> bool:
        return self.wall_time is not None or self.working_time is not None

    def __bool__(self) -> bool:
        return self.timed or any(getattr(self, name) is not None for name in SPENDING)


class LimitExceeded(Exception):
    """An attempt stopped past one of its limits; `error` says which."""

    def __init__(self, error: TrajectoryError) -> None:
        super().__init__(error.message)
        self.error = error


Waited = Callable[[], Awaitable[float]]
"""Seconds the attempt's calls waited for a free worker so far, as the proxy measured them."""


class AttemptWatch:
    """Enforces one attempt's limits while its runner plays."""

    def __init__(self, limits: Limits, trajectory: Trajectory, waited: Waited | None) -> None:
        """`waited`: where the waits are read (the proxy's record of a keyed attempt); None:
        from the answers the runner's client got."""
        self.limits = limits
        self.trajectory = trajectory
        self.heard_wait = 0.0
        """Seconds the answers the runner's client got say their calls waited, summed."""
        self.sent = 0
        """Requests the runner's client sent whose answers' heads have not come."""
        self._heard = asyncio.Event()
        self._waited = waited
        self._timeout: asyncio.Timeout | None = None
        self._reached: str | None = None
        self._known_wait = 0.0
        """The waits learned when working time's deadline last came."""

    @contextlib.asynccontextmanager
    async def enforcing(self) -> AsyncIterator[None]:
        """Run the block within the limits. Raises: LimitExceeded when one stopped it."""
        token = _WATCHING.set(self)
        self._timeout = timeout = asyncio.timeout(None)
        try:
            async with timeout:
                clock = asyncio.ensure_future(self._keep_time()) if self.limits.timed else None
                try:
                    yield
                finally:
                    if clock is not None:
                        clock.cancel()
        except TimeoutError:
            if self._reached is None or not timeout.expired():
                raise
            raise LimitExceeded(self._error(self._reached)) from None
        finally:
            self._timeout = None  # a task the runner left behind may call on: let it
            _WATCHING.reset(token)

    async def before_call(self) -> None:
        """Stop the attempt here, its call unsent, when the call would pass a limit."""
        reached = self.limits.spending_over(self.trajectory, calling=True)
        if reached is None or self._timeout is None:
            return
        self._stop(reached)
        # The deadline is now: its cancellation ends this wait, before the call is sent.
        await asyncio.get_running_loop().create_future()

    def heard(self, waited: float) -> None:
        """An answer's head came, saying its call waited `waited` seconds for a worker."""
        self.heard_wait += waited
        self.sent = max(self.sent - 1, 0)
        self._heard.set()

    async def waited(self) -> float:
        """Seconds the attempt's calls waited for a free worker so far."""
        if self._waited is None:
            return self.heard_wait
        return max(await self._waited(), self.heard_wait)

    async def _keep_time(self) -> None:
        """Stop the attempt at its time limit; working time's deadline moves on by the waits
        learned when it comes."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        wall, working = self.limits.wall_time, self.limits.working_time
        walls = None if wall is None else started + wall
        while True:
            deadlines = [] if walls is None else [(walls, "wall_time")]
            if working is not None:
                if loop.time() >= started + working + self._known_wait:
                    self._known_wait = await self.waited()
                deadlines.append((started + working + self._known_wait, "working_time"))
            when, name = min(deadlines)
            if when > loop.time():
                await asyncio.sleep(when - loop.time())
            elif name == "working_time" and self._waited is None and self.sent:
                await self._next_answer(walls)
            else:
                self._stop(name)
                return

    async def _next_answer(self, until: float | None) -> None:
        """Wait for the head of an answer in flight (at most `until`): working time's deadline
        came while the runner's client waited for one, whose head says how long its call waited
        for a worker. The proxy's record of a keyed attempt counts calls still waiting."""
        self._heard.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout_at(until):
                await self._heard.wait()

    def _error(self, name: str) -> TrajectoryError:
        if name in SPENDING:
            return self.limits.exceeded(name, self.trajectory)
        value = getattr(self.limits, name)
        message = f"the attempt went past its {name} limit (eval.limits.{name}={value:g} s)"
        if name == "working_time":
            message += f"; its model calls waited {self._known_wait:.3g} s for a free worker"
        return TrajectoryError("limit_exceeded", message, limit=name)

    def _stop(self, name: str) -> None:
        """End the attempt now, past the limit `name`."""
        if self._reached is None:
            self._reached = name
        if self._timeout is not None:
            self._timeout.reschedule(asyncio.get_running_loop().time())


_WATCHING: ContextVar[AttemptWatch | None] = ContextVar("agent_eval_limits", default=None)
"""The watch of the attempt this task plays: concurrent attempts share one HTTP client."""


def watch_calls(client: openai.AsyncOpenAI) -> None:
    """Have the calls made with `client` and its copies checked against their attempt's limits."""
    add_request_hook(client, _before_request)
    add_response_hook(client, _on_response)


async def _before_request(request: httpx2.Request) -> None:
    watch = _WATCHING.get()
    if watch is not None:
        await watch.before_call()
        watch.sent += 1


async def _on_response(response: httpx2.Response) -> None:
    watch = _WATCHING.get()
    if watch is not None:
        watch.heard(waited_seconds(response.headers.get(WAITED_HEADER)))
