"""`agent-eval serve --processes 2`: what one process routes, stores, changes or probes holds
for the other. Each request goes to one process's own port, so which process takes it is
known, not left to the kernel."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from agent_eval.proxy.server.group import LOCAL_HEADER
from agent_eval.proxy.server.worker_views import merged
from agent_eval.testing.mock_worker import MockWorker
from agent_eval.wire import WORKER_HEADER
from tests.helpers.cli_runs import agent_eval, served_url_in
from tests.helpers.proxy import StartWorkers
from tests.helpers.waits import eventually, wait_ready

TOKEN = "group-admin-token"
ADMIN = {"Authorization": f"Bearer {TOKEN}"}
SYSTEM = {"role": "system", "content": "You are a careful agent. " * 40}


@dataclass
class Served:
    """The group's shared base URL, and each process's own origin (member 0, then 1)."""

    base_url: str
    origins: list[str]


@contextlib.asynccontextmanager
async def serving_two(
    workers: list[MockWorker], tmp_path: Path, *options: str
) -> AsyncIterator[Served]:
    """`agent-eval serve --processes 2` over the workers, each process seeing them healthy."""
    run_dir = tmp_path / "logs"
    endpoints = [arg for worker in workers for arg in ("--endpoint", worker.url)]
    serve = await agent_eval(
        "serve", "--port", "0", "--processes", "2", *endpoints, "--run-dir", str(run_dir),
        "--admin-token", TOKEN, "--health-interval", "0.05", "--failure-threshold", "1",
        "--success-threshold", "1", *options, cwd=tmp_path,
    )  # fmt: skip
    try:
        assert serve.stdout is not None
        base_url = served_url_in((await asyncio.wait_for(serve.stdout.readline(), 120)).decode())
        folder = run_dir / "proxy-group"
        origins = [(folder / f"member-{i}").read_text() for i in range(2)]
        for origin in origins:
            await wait_ready(origin + "/v1", len(workers))
        yield Served(base_url, origins)
    finally:
        serve.send_signal(signal.SIGTERM)
        await asyncio.wait_for(serve.communicate(), 30)


async def _post(url: str, body: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """A POST on a connection of its own: the answer and the worker that made it."""
    async with aiohttp.ClientSession() as http, http.post(url, json=body) as answer:
        assert answer.status == 200, await answer.text()
        return await answer.json(), answer.headers.get(WORKER_HEADER)


async def _json(method: str, url: str, **options: Any) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as http, http.request(method, url, **options) as answer:
        return answer.status, await answer.json()


async def test_a_conversation_without_session_id_stays_on_one_worker_across_processes(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    workers = await start_workers(3)
    homes: dict[int, set[str | None]] = {}
    async with serving_two(workers, tmp_path, "--policy", "prefix") as served:
        for talk in range(9):
            messages = [SYSTEM, {"role": "user", "content": f"Task {talk}: add up the numbers."}]
            for turn in range(4):  # turn by turn, to one process, then the other
                url = served.origins[turn % 2] + "/v1/chat/completions"
                answer, worker = await _post(url, {"model": "mock-model", "messages": messages})
                homes.setdefault(talk, set()).add(worker)
                reply = answer["choices"][0]["message"]["content"]
                messages += [{"role": "assistant", "content": reply}]
                messages += [{"role": "user", "content": f"And then step {turn}?"}]
    assert all(len(urls) == 1 for urls in homes.values()), homes
    assert len(set.union(*homes.values())) > 1  # the conversations spread over the workers


async def test_a_response_stored_by_one_process_is_continued_through_the_other(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    workers = await start_workers(2, responses_api=False)  # the proxy keeps the conversation
    ids = []
    async with serving_two(workers, tmp_path) as served:
        previous: dict[str, str] = {}
        for turn, origin in enumerate([*served.origins, served.origins[0]]):
            body = {"model": "mock-model", "input": f"turn {turn}", **previous}
            answer, _ = await _post(origin + "/v1/responses", body)
            ids.append(answer["id"])
            previous = {"previous_response_id": answer["id"]}
        other = served.origins[1]
        assert (await _json("GET", f"{other}/v1/responses/{ids[0]}"))[0] == 200
        assert (await _json("DELETE", f"{served.origins[0]}/v1/responses/{ids[0]}"))[0] == 200
        assert (await _json("GET", f"{other}/v1/responses/{ids[0]}"))[0] == 404
        assert (await _json("GET", f"{other}/v1/responses/{ids[2]}"))[0] == 200
    last = [worker.requests_to("/v1/chat/completions") for worker in workers]
    sent = max((bodies[-1] for bodies in last if bodies), key=lambda b: len(b["messages"]))
    users = [m["content"] for m in sent["messages"] if m["role"] == "user"]
    assert users == ["turn 0", "turn 1", "turn 2"]  # the whole conversation, from both


async def test_workers_added_and_removed_through_one_process_change_every_process(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    first, added = await start_workers(2)
    async with serving_two([first], tmp_path) as served:
        root = served.base_url.removesuffix("/v1")
        status, _ = await _json("POST", root + "/workers", json={"url": added.url}, headers=ADMIN)
        assert status == 201
        for origin in served.origins:
            await wait_ready(origin + "/v1", 2)
        for origin in served.origins * 3:
            await _post(origin + "/v1/chat/completions", _chat("hi"))
        views = [await _local_workers(origin) for origin in served.origins]
        assert all({w["url"] for w in view} == {first.url, added.url} for view in views)
        status, group = await _json("GET", root + "/workers")
        assert status == 200 and group["processes"] == 2
        assert sum(w["served"] for w in group["workers"]) == 6
        assert group["workers"] == merged(views)
        status, _ = await _json(
            "DELETE", root + "/workers", params={"url": added.url}, headers=ADMIN
        )
        assert status == 200
        views = [await _local_workers(origin) for origin in served.origins]
        assert all([w["url"] for w in view] == [first.url] for view in views)


async def test_only_the_leading_process_probes_and_the_other_copies_what_it_found(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    probed, unwatched = await start_workers(2)
    async with serving_two([probed, unwatched], tmp_path) as served:
        leader, follower = served.origins
        # Out of the leader's pool only: the follower still routes to it, and probes it no more.
        status, _ = await _json(
            "DELETE", leader + "/workers", params={"url": unwatched.url},
            headers={**ADMIN, LOCAL_HEADER: "1"},
        )  # fmt: skip
        assert status == 200
        before = unwatched.stats.requests["/health"]
        rounds = probed.stats.requests["/health"] + 20
        await eventually(lambda: probed.stats.requests["/health"] >= rounds, 30)
        assert unwatched.stats.requests["/health"] == before
        assert {w["url"] for w in await _local_workers(follower)} == {probed.url, unwatched.url}
        probed.behavior.healthy = False

        async def follower_sees_it_down() -> bool:
            views = {w["url"]: w for w in await _local_workers(follower)}
            return not views[probed.url]["healthy"] and views[unwatched.url]["healthy"]

        await eventually(follower_sees_it_down, 30, lambda: "the follower kept the old health")


async def _local_workers(origin: str) -> list[dict[str, Any]]:
    """One process's own GET /workers."""
    status, body = await _json("GET", origin + "/workers", headers={LOCAL_HEADER: "1"})
    assert status == 200 and "processes" not in body
    workers: list[dict[str, Any]] = body["workers"]
    return workers


def _chat(text: str) -> dict[str, Any]:
    return {"model": "mock-model", "messages": [{"role": "user", "content": text}]}


def test_a_group_listing_adds_counts_and_shows_the_worst_state() -> None:
    one = {"url": "http://w", "healthy": True, "breaker": "closed", "in_flight": 1, "served": 4,
           "failures": 0, "prompt_tokens": 100, "cached_tokens": 50, "cache_hit_rate": 0.5,
           "rejected": 1, "answered": 4, "answer_seconds": 2.0, "last_error": None}  # fmt: skip
    other = {**one, "healthy": False, "breaker": "half_open", "served": 6, "prompt_tokens": 300,
             "cached_tokens": 250, "last_error": "refused"}  # fmt: skip
    unreported = {**one, "url": "http://v", "cached_tokens": None, "cache_hit_rate": None}
    (both, alone) = merged([[one, unreported], [other]])
    assert both["served"] == 10 and both["in_flight"] == 2 and both["prompt_tokens"] == 400
    assert (both["rejected"], both["answered"], both["answer_seconds"]) == (2, 8, 4.0)
    assert both["cached_tokens"] == 300 and both["cache_hit_rate"] == 0.75
    assert not both["healthy"] and both["breaker"] == "half_open"
    assert both["last_error"] == "refused"
    assert alone == unreported
