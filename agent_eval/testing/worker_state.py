"""Run-time knobs, counters, hold gate and reply script of one mock worker."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from typing import Annotated, Any

from pydantic import Field, TypeAdapter

from agent_eval.testing.kv_cache import Lookup, Prefill
from agent_eval.testing.replies import JSON, Prompt, Reply, two_step_reply
from agent_eval.wire import TokenFields

LOG_SIZE = 64  # exchanges a worker keeps: many agent attempts; few of the proxy tests' huge bodies


@dataclass
class Behavior:
    """How the worker answers; change it at run time from Python or via `POST /mock/behavior`."""

    latency: float = 0.0  # seconds before answering, or before the first stream chunk
    chunk_delay: float = 0.0  # seconds between stream chunks
    stream_chunks: int = 4  # content pieces per streamed message or argument string
    error_status: int | None = None  # generation requests answer this status while set
    error_count: int = 0  # > 0: only the next N requests fail, then error_status clears
    error_rate: float = 1.0  # the share of generation requests that fail while error_status is set
    hang: bool = False  # generation requests wait on the worker's gate
    die_mid_stream_after: int | None = None  # abort the connection after N stream chunks
    healthy: bool = True  # health routes answer 503 when False
    two_step: bool = False  # unscripted replies play `two_step_reply`'s calculator trajectory
    # Two-step answers are wrong above this request temperature (missing: 1.0, OpenAI's default).
    wrong_above_temperature: float | None = None
    # Two-step answers fill the request's max tokens and are wrong when it is below this.
    needs_tokens: int | None = None
    # Answers' `created` stamp; None: the time. Fixed, two answers compare byte for byte.
    created: int | None = None
    # A fixed capacity, as a GPU server's running batch: at most this many generation requests
    # spend `latency` at once, the others wait in turn (latency grows with the queue); None: no
    # bound. Past `queue_limit` waiting, a request is answered `busy_status` at once.
    capacity: Annotated[int | None, Field(ge=1)] = None
    queue_limit: Annotated[int | None, Field(ge=0)] = None
    busy_status: int = 429

    def take_error(self) -> int | None:
        """The status this generation request must fail with, if any; counts down `error_count`."""
        status = self.error_status
        if status is not None and random.random() >= self.error_rate:
            return None
        if status is not None and self.error_count > 0:
            self.error_count -= 1
            if self.error_count == 0:
                self.error_status = None
        return status

    def update(self, changes: Mapping[str, Any]) -> None:
        """Validate `changes` (field name to value) and apply them in place.

        Raises: ValueError on an unknown field or a value of the wrong type.
        """
        known = {f.name for f in fields(self)}
        if unknown := sorted(set(changes) - known):
            raise ValueError(f"unknown behavior fields {unknown}; known: {sorted(known)}")
        checked = _BEHAVIOR.validate_python({**asdict(self), **changes})
        for name in changes:
            setattr(self, name, getattr(checked, name))


_BEHAVIOR = TypeAdapter(Behavior)


@dataclass
class WorkerStats:
    """Counters of one worker since it started."""

    requests: Counter[str] = field(default_factory=Counter)  # by path, every route
    generation_requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    rejected: int = 0  # requests answered busy_status because the queue was full
    disconnects: int = 0  # clients that went away mid-request or mid-stream
    aborted_streams: int = 0  # streams cut on purpose by `die_mid_stream_after`
    weight_updates: int = 0  # POST /update_weights_from_disk calls, failed ones included
    # Prompt tokens prefilled and those of them the simulated prefix cache held (when it is on).
    prompt_tokens: int = 0
    cached_tokens: int = 0
    # Authorization headers of the latest generation requests: which key reached the worker.
    authorizations: deque[str | None] = field(default_factory=lambda: deque(maxlen=64))
    # Headers of the latest generation requests, names in lower case.
    headers: deque[dict[str, str]] = field(default_factory=lambda: deque(maxlen=64))
    # (path, body) of the latest generation requests: what the worker was asked, exactly.
    bodies: deque[tuple[str, bytes]] = field(default_factory=lambda: deque(maxlen=64))

    def as_dict(self) -> dict[str, Any]:
        """The counters as JSON-ready values."""
        bodies = [[path, body.decode(errors="replace")] for path, body in self.bodies]
        return {
            **vars(self),
            "authorizations": list(self.authorizations),
            "headers": list(self.headers),
            "bodies": bodies,
        }

    def count_prefill(self, lookup: Lookup) -> None:
        self.prompt_tokens += lookup.prompt_tokens
        self.cached_tokens += lookup.cached_tokens

    @contextmanager
    def generation(self) -> Iterator[None]:
        """Count one generation request while it runs; a cancelled one lost its client."""
        self.generation_requests += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            yield
        except asyncio.CancelledError:
            self.disconnects += 1
            raise
        finally:
            self.in_flight -= 1


@dataclass(frozen=True)
class Served:
    """One generation request as the worker read it, and what it answered.

    `answer` is the body sent; for a stream, the body its events add up to.
    """

    path: str
    request: JSON
    status: int
    stream: bool
    answer: JSON


class HoldGate:
    """Holds requests until released, so tests wait for arrivals instead of sleeping."""

    def __init__(self) -> None:
        self._open = asyncio.Event()
        self._change = asyncio.Event()
        self.held = 0

    async def hold(self) -> None:
        """Wait here until `release()`, or until the caller is cancelled."""
        opened = self._open
        self._count(+1)
        try:
            await opened.wait()
        finally:
            self._count(-1)

    def release(self) -> None:
        """Let every held request go on; later arrivals are held again while `hang` is set."""
        self._open.set()
        self._open = asyncio.Event()

    async def wait_for_arrivals(self, n: int, timeout: float = 10.0) -> None:
        """Return once `n` requests are held. Raises: asyncio.TimeoutError after `timeout` s."""
        await asyncio.wait_for(self._until(lambda: self.held >= n), timeout)

    async def wait_until_empty(self, timeout: float = 10.0) -> None:
        """Return once no request is held. Raises: asyncio.TimeoutError after `timeout` s."""
        await asyncio.wait_for(self._until(lambda: self.held == 0), timeout)

    def _count(self, step: int) -> None:
        self.held += step
        self._change.set()
        self._change = asyncio.Event()

    async def _until(self, ready: Callable[[], bool]) -> None:
        while not ready():
            await self._change.wait()


class Queue:
    """A fixed number of generation requests served at once, the others waiting in turn."""

    def __init__(self) -> None:
        self.running = 0
        self.waiting = 0
        self._turn = asyncio.Condition()

    def full(self, behavior: Behavior) -> bool:
        """Whether a request now would find every slot and every queue place taken."""
        capacity, bound = behavior.capacity, behavior.queue_limit
        if capacity is None or bound is None:
            return False
        return self.running >= capacity and self.waiting >= bound

    @contextlib.asynccontextmanager
    async def slot(self, capacity: int | None) -> AsyncIterator[None]:
        """Hold one of `capacity` slots (None: no bound) while the body runs."""
        if capacity is None:
            yield
            return
        async with self._turn:
            self.waiting += 1
            try:
                await self._turn.wait_for(lambda: self.running < capacity)
            finally:
                self.waiting -= 1
            self.running += 1
        try:
            yield
        finally:
            async with self._turn:
                self.running -= 1
                self._turn.notify(1)


@dataclass
class WorkerState:
    """Everything the handlers of one worker share: one `web.AppKey` entry."""

    name: str
    model: str
    behavior: Behavior = field(default_factory=Behavior)
    stats: WorkerStats = field(default_factory=WorkerStats)
    gate: HoldGate = field(default_factory=HoldGate)
    queue: Queue = field(default_factory=Queue)
    script: deque[Reply] = field(default_factory=deque)
    # The latest generation requests and their answers, oldest first: GET /mock/requests.
    served: deque[Served] = field(default_factory=lambda: deque(maxlen=LOG_SIZE))
    port: int = 0
    ids: Iterator[int] = field(default_factory=itertools.count)
    # The weights loaded, as SGLang's model_path: `model` until /update_weights_from_disk.
    model_path: str = ""
    # False stands in for servers without /v1/responses (llama.cpp, older vLLM).
    responses_api: bool = True
    # False stands in for servers without vLLM's and SGLang's chat /tokenize (llama.cpp's).
    tokenize_api: bool = True
    # SGLang's --api-key: every route but the health ones then wants `Bearer KEY`.
    api_key: str | None = None
    # The simulated prefix cache and its prefill delay; None answers at once, caching nothing.
    prefill: Prefill | None = None
    # Whose token-id fields the worker answers (vLLM's or SGLang's); None: it has none.
    token_fields: TokenFields | None = None
    # Whether its toy chat template renders a re-sent assistant turn differently (drift).
    drift: bool = False

    def __post_init__(self) -> None:
        self.model_path = self.model_path or self.model

    def next_reply(self, prompt: Prompt) -> Reply:
        """The next scripted reply, or else one derived from the prompt."""
        if self.script:
            return self.script.popleft()
        if self.behavior.two_step:
            behavior = self.behavior
            return two_step_reply(prompt, behavior.wrong_above_temperature, behavior.needs_tokens)
        return Reply(f"mock reply from {self.name}: {prompt.last_user[:60]}")
