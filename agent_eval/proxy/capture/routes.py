"""The attempts admin API: POST /attempts opens a key, GET reads its record, DELETE takes it."""

from __future__ import annotations

import logging
from typing import Annotated

import orjson
from aiohttp import web
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from agent_eval.proxy.capture.attempt import AttemptLimits, Price
from agent_eval.proxy.capture.store import AttemptStore
from agent_eval.proxy.errors import error_response, invalid_json, too_many_attempts, unknown_attempt

log = logging.getLogger(__name__)

ATTEMPTS = web.AppKey("attempts", AttemptStore)
ATTEMPT_PREFIX = "/a/{key}"
"""Where the generation routes are for a client that can only set a base URL."""


class PriceBody(BaseModel):
    """What a million prompt and completion tokens cost."""

    model_config = ConfigDict(extra="forbid")

    prompt: float = Field(ge=0)
    completion: float = Field(ge=0)


class LimitsBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_calls: int | None = Field(None, ge=1)
    max_tokens: int | None = Field(None, ge=1)
    max_cost: float | None = Field(None, gt=0)
    price: PriceBody | None = None

    @model_validator(mode="after")
    def _priced(self) -> LimitsBody:
        if self.max_cost is not None and self.price is None:
            raise ValueError("max_cost needs a price")
        return self

    def limits(self) -> AttemptLimits:
        price = None if self.price is None else Price(self.price.prompt, self.price.completion)
        return AttemptLimits(self.max_calls, self.max_tokens, self.max_cost, price)


class OpenBody(BaseModel):
    """POST /attempts: the attempt's label (printable, as a session id is), its key's life,
    its limits."""

    model_config = ConfigDict(extra="forbid")

    attempt: Annotated[str, StringConstraints(pattern=r"^[\x20-\x7e]{1,200}$")]
    ttl_s: float | None = Field(None, gt=0)
    limits: LimitsBody = Field(default_factory=LimitsBody)


def add_routes(app: web.Application) -> None:
    app.router.add_post("/attempts", open_attempt)
    app.router.add_get("/attempts/{key}", read_attempt)
    app.router.add_delete("/attempts/{key}", end_attempt)
    app.on_cleanup.append(_count_left_open)


async def _count_left_open(app: web.Application) -> None:
    """Say at the proxy's stop how many attempts were never ended: records no one took."""
    if left := len(app[ATTEMPTS]):
        log.warning("%d attempt(s) open at stop", left)


async def open_attempt(request: web.Request) -> web.Response:
    """POST /attempts {"attempt", "ttl_s"?, "limits"?}: 201 {"key", "base_path", "expires_at"},
    and "origin" where the attempt's calls and its end go when the proxy runs on several
    processes."""
    try:
        body = OpenBody.model_validate(orjson.loads(await request.read()))
    except orjson.JSONDecodeError as exc:
        return invalid_json(str(exc))
    except ValidationError as exc:
        return _bad_fields(exc)
    try:
        key, attempt = request.app[ATTEMPTS].open(body.attempt, body.ttl_s, body.limits.limits())
    except OverflowError as exc:
        return too_many_attempts(exc.args[0])
    opened = {"key": key, "base_path": f"/a/{key}", "expires_at": attempt.expires_at}
    if (origin := request.app[ATTEMPTS].origin) is not None:
        opened["origin"] = origin  # the proxy on several processes: this one holds the record
    return web.Response(status=201, body=orjson.dumps(opened), content_type="application/json")


async def read_attempt(request: web.Request) -> web.Response:
    """GET /attempts/KEY: the attempt's record so far."""
    attempt = request.app[ATTEMPTS].find(request.match_info["key"])
    if attempt is None:
        return unknown_attempt()
    return web.Response(body=attempt.record(), content_type="application/json")


async def end_attempt(request: web.Request) -> web.Response:
    """DELETE /attempts/KEY: end the attempt, wait for its calls in flight, take its record."""
    record = await request.app[ATTEMPTS].end(request.match_info["key"])
    if record is None:
        return unknown_attempt()
    return web.Response(body=record, content_type="application/json")


# The handlers that take the admin token.
ADMIN = frozenset({open_attempt, read_attempt, end_attempt})


def _bad_fields(exc: ValidationError) -> web.Response:
    where = ", ".join(".".join(map(str, e["loc"])) or "body" for e in exc.errors())
    return error_response(
        400,
        "invalid_attempt",
        f'the attempt\'s fields are wrong ({where}); send {{"attempt": "LABEL", '
        '"ttl_s": SECONDS, "limits": {"max_calls": N, "max_tokens": N, "max_cost": X, '
        '"price": {"prompt": X, "completion": X}}}; all but attempt are optional, and max_cost '
        "needs a price (of a million tokens)",
    )
