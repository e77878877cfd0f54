"""Hostile and careless clients, each case reproduced the way it was found: none takes the proxy
or its workers down, and what a request causes is charged to that request."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import stat
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from agent_eval.proxy.config import ProxyConfig
from agent_eval.proxy.server.process import proxy_process
from agent_eval.testing.mock_worker import MockWorker
from tests.helpers.processes import rss_mb
from tests.helpers.proxy import FAST_HEALTH, StartProxy, StartWorkers
from tests.helpers.proxy_calls import CHAT, assert_openai_error, raw, serve_process, worker_state
from tests.helpers.waits import eventually, wait_ready

ADMIN = "admin-token-for-tests"


async def raw_http(base_url: str, request: bytes, read_timeout: float = 10.0) -> bytes:
    """Send bytes as they are on a fresh connection; the answer's head and body."""
    host, port = base_url.removeprefix("http://").removesuffix("/v1").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(request)
        await writer.drain()
        async with asyncio.timeout(read_timeout):
            head = await reader.readuntil(b"\r\n\r\n")
            length = [v for k, v in _header_lines(head) if k == b"content-length"]
            return head + (
                await reader.readexactly(int(length[0])) if length else await reader.read()
            )
    finally:
        writer.close()


def _header_lines(head: bytes) -> list[tuple[bytes, bytes]]:
    lines = head.split(b"\r\n")[1:]
    return [(k.strip().lower(), v.strip()) for k, _, v in (line.partition(b":") for line in lines)]


def post_head(path: str, body: bytes, *headers: bytes) -> bytes:
    lines = [b"POST /v1" + path.encode() + b" HTTP/1.1", b"Host: proxy", b"Connection: close"]
    lines += [b"Content-Type: application/json", b"Content-Length: %d" % len(body), *headers]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def status_and_json(answer: bytes) -> tuple[int, dict]:
    head, _, body = answer.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    if b"transfer-encoding: chunked" in head.lower():
        size, _, rest = body.partition(b"\r\n")
        body = rest[: int(size, 16)]
    return status, json.loads(body)


async def chat_status(base_url: str) -> tuple[int, str | None]:
    """One chat request on its own connection: the status and Retry-After of its answer."""
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{base_url}/chat/completions", json=CHAT) as answer,
    ):
        await answer.read()
        return answer.status, answer.headers.get("Retry-After")


# 1. Bodies and headers that no longer describe what is forwarded; poison requests.


async def test_a_gzip_body_reaches_the_worker_decoded_and_without_its_encoding(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    workers = await start_workers(2)
    base_url = await start_proxy(workers, health={**FAST_HEALTH, "breaker_failures": 2})
    headers = {"Content-Encoding": "gzip", "Content-Type": "application/json"}
    body = gzip.compress(json.dumps(CHAT).encode())
    for _ in range(6):
        status, answer = await raw("POST", f"{base_url}/chat/completions", body, headers)
        assert status == 200, answer
    seen = [h for w in workers for h in w.stats.headers]
    assert len(seen) == 6 and not any("content-encoding" in h for h in seen)


async def test_headers_named_in_connection_are_not_forwarded(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    (worker,) = await start_workers(1)
    base_url = await start_proxy([worker])
    body = json.dumps(CHAT).encode()
    request = post_head(
        "/chat/completions", body, b"Connection: close, X-Hop", b"X-Hop: 1", b"X-Kept: 2"
    )
    status, _ = status_and_json(
        await raw_http(base_url, request.replace(b"Connection: close\r\n", b""))
    )
    assert status == 200
    (headers,) = worker.stats.headers
    assert headers["x-kept"] == "2" and "x-hop" not in headers


async def test_a_poison_request_is_tried_on_two_workers_and_opens_no_breaker(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    workers = await start_workers(3)
    for worker in workers:
        worker.behavior.error_status = 500
    base_url = await start_proxy(
        workers, policy="round_robin", health={**FAST_HEALTH, "breaker_failures": 2}
    )
    for _ in range(15):
        status, body = await raw("POST", f"{base_url}/chat/completions", json.dumps(CHAT).encode())
        assert status == 500
        assert "request itself" in assert_openai_error(body, "request_failed_on_every_worker")
    assert sum(w.stats.generation_requests for w in workers) == 30, "not exactly two tries each"
    for worker in workers:
        state = await worker_state(base_url, worker)
        assert (state["breaker"], state["failures"]) == ("closed", 0)
        worker.behavior.error_status = None
    assert (await raw("POST", f"{base_url}/chat/completions", json.dumps(CHAT).encode()))[0] == 200


async def test_a_poison_request_to_a_lone_worker_is_tried_twice_and_opens_no_breaker(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    (worker,) = await start_workers(1)
    worker.behavior.error_status = 500
    base_url = await start_proxy([worker], health={**FAST_HEALTH, "breaker_failures": 2})
    for _ in range(5):
        status, body = await raw("POST", f"{base_url}/chat/completions", json.dumps(CHAT).encode())
        assert status == 500
        assert_openai_error(body, "request_failed_on_every_worker")
    assert worker.stats.generation_requests == 10
    state = await worker_state(base_url, worker)
    assert (state["breaker"], state["failures"]) == ("closed", 0)


async def test_a_failure_another_worker_does_not_repeat_is_charged_to_the_first(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    bad, good = await start_workers(2)
    bad.behavior.error_status = 500
    base_url = await start_proxy([bad, good], policy="round_robin")
    for _ in range(4):
        assert (await raw("POST", f"{base_url}/chat/completions", json.dumps(CHAT).encode()))[
            0
        ] == 200
    assert (await worker_state(base_url, bad))["failures"] == bad.stats.generation_requests >= 1
    assert (await worker_state(base_url, good))["failures"] == 0


# 3. Header bytes that are not UTF-8; the auth scheme.


async def test_header_bytes_that_are_not_utf8_never_give_500(
    start_workers: StartWorkers, start_proxy: StartProxy, tmp_path: Path
) -> None:
    (worker,) = await start_workers(1)
    base_url = await start_proxy([worker], record_dir=tmp_path)
    body = json.dumps(CHAT).encode()
    answer = await raw_http(
        base_url, post_head("/chat/completions", body, b"X-Session-ID: abc\xff")
    )
    assert status_and_json(answer)[0] == 200
    long_user = json.dumps({**CHAT, "user": "u" * 10_000}).encode()
    assert (
        status_and_json(await raw_http(base_url, post_head("/chat/completions", long_user)))[0]
        == 200
    )
    # The recorder writes on its own task: the second session's file may come a moment later.
    names: list[str] = []

    def both_written() -> bool:
        names[:] = sorted(p.name for p in tmp_path.iterdir())
        return len(names) == 2

    await eventually(both_written, why=lambda: f"recorded files: {names}")
    assert all(len(name) < 100 for name in names), names


async def test_keys_with_odd_bytes_and_schemes(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    (worker,) = await start_workers(1)
    base_url = await start_proxy([worker], api_key="s3cret")
    body = json.dumps(CHAT).encode()
    for auth in (b"Bearer \xff", b"s3cret", b"Basic s3cret", b"Bearer"):
        status, error = status_and_json(
            await raw_http(
                base_url, post_head("/chat/completions", body, b"Authorization: " + auth)
            )
        )
        assert status == 401, auth
        assert_openai_error(error, "invalid_api_key")
    for auth in (b"bearer s3cret", b"BEARER  s3cret "):
        answer = await raw_http(
            base_url, post_head("/chat/completions", body, b"Authorization: " + auth)
        )
        assert status_and_json(answer)[0] == 200, auth


# 4. Changing workers takes the admin token; the worker key goes where the operator says.


async def test_workers_change_only_with_the_admin_token(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    first, second, third = await start_workers(3)
    base_url = await start_proxy([first], admin_token=ADMIN, worker_api_key="worker-key")
    root = base_url.removesuffix("/v1")
    new = json.dumps({"url": second.url}).encode()
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Bearer worker-key"}):
        status, body = await raw("POST", f"{root}/workers", new, headers)
        assert status == 401 and "admin token" in assert_openai_error(body, "invalid_admin_token")
        status, _ = await raw("DELETE", f"{root}/workers?url={first.url}", None, headers)
        assert status == 401
    admin = {"Authorization": f"Bearer {ADMIN}"}
    assert (await raw("POST", f"{root}/workers", new, admin))[0] == 201
    keyed = json.dumps({"url": third.url, "worker_key": True}).encode()
    assert (await raw("POST", f"{root}/workers", keyed, admin))[0] == 201
    status, listed = await raw("GET", f"{root}/workers")
    assert status == 200 and len(listed["workers"]) == 3
    await wait_ready(base_url, 3)
    for _ in range(6):
        assert (await raw("POST", f"{base_url}/chat/completions", json.dumps(CHAT).encode()))[
            0
        ] == 200
    assert set(first.stats.authorizations) == {"Bearer worker-key"}
    assert set(second.stats.authorizations) == {None}, "the worker key went to an added worker"
    assert set(third.stats.authorizations) == {"Bearer worker-key"}


@pytest.mark.parametrize("path", ["//evil.example/x", "http://evil.example/", "/a b", "health"])
async def test_health_paths_are_paths_on_the_worker(
    start_workers: StartWorkers, start_proxy: StartProxy, path: str
) -> None:
    first, second = await start_workers(2)
    base_url = await start_proxy([first], admin_token=ADMIN)
    body = json.dumps({"url": second.url, "health_path": path}).encode()
    status, error = await raw(
        "POST",
        base_url.removesuffix("/v1") + "/workers",
        body,
        {"Authorization": f"Bearer {ADMIN}"},
    )
    assert status == 400 and "path on the worker" in assert_openai_error(
        error, "invalid_worker_url"
    )


async def test_a_proxy_process_writes_its_admin_token_for_its_owner_alone(tmp_path: Path) -> None:
    async with MockWorker() as worker:
        config = ProxyConfig(endpoints=[worker.url], port=0, health=FAST_HEALTH)
        async with proxy_process(config, tmp_path) as base_url:
            token_file = tmp_path / "admin-token"
            assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
            token = token_file.read_text().strip()
            assert len(token) >= 32 and token not in (tmp_path / "proxy.json").read_text()
            new = json.dumps({"url": "http://127.0.0.1:9"}).encode()
            root = base_url.removesuffix("/v1")
            assert (await raw("POST", f"{root}/workers", new))[0] == 401
            auth = {"Authorization": f"Bearer {token}"}
            assert (await raw("POST", f"{root}/workers", new, auth))[0] == 201


# 5. A deadline for each worker attempt.


@pytest.mark.parametrize("stream", [False, True])
async def test_a_stalled_worker_attempt_goes_to_another_worker(
    start_workers: StartWorkers, start_proxy: StartProxy, stream: bool
) -> None:
    stalled, steady = await start_workers(2)
    stalled.behavior.latency = 30
    base_url = await start_proxy(
        [stalled, steady], policy="round_robin", timeouts={"worker": 0.3, "total": 20}
    )
    for _ in range(4):
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=15)) as http,
            http.post(f"{base_url}/chat/completions", json={**CHAT, "stream": stream}) as answer,
        ):
            assert answer.status == 200
            text = await answer.text()
            assert '"system_fingerprint":"w1"' in text, text
    assert stalled.stats.generation_requests >= 1


# 7. Floods: a global cap, a cap per worker, the proxy's own limits never charged to a worker.


async def test_past_the_in_flight_cap_clients_get_429_with_retry_after(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    (worker,) = await start_workers(1)
    worker.behavior.hang = True
    base_url = await start_proxy([worker], limits={"max_in_flight": 4})
    tasks = [asyncio.create_task(chat_status(base_url)) for _ in range(10)]
    await worker.gate.wait_for_arrivals(4)
    await asyncio.wait(tasks, timeout=5, return_when=asyncio.FIRST_COMPLETED)
    await asyncio.sleep(0.3)
    refused = [t.result() for t in tasks if t.done()]
    assert refused and all(r == (429, "1") for r in refused)
    worker.gate.release()
    worker.behavior.hang = False
    results = await asyncio.gather(*tasks)
    assert sorted(s for s, _ in results).count(200) == 4
    assert worker.stats.max_in_flight == 4


async def test_a_worker_gets_at_most_its_connection_cap_and_the_rest_wait(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    (worker,) = await start_workers(1)
    worker.behavior.hang = True
    base_url = await start_proxy([worker], limits={"max_connections_per_worker": 3})
    tasks = [asyncio.create_task(chat_status(base_url)) for _ in range(9)]
    await worker.gate.wait_for_arrivals(3)
    await asyncio.sleep(0.3)
    assert worker.gate.held == 3, "more connections than the cap reached the worker"
    worker.behavior.hang = False
    worker.gate.release()
    assert [status for status, _ in await asyncio.gather(*tasks)] == [200] * 9
    assert worker.stats.max_in_flight == 3


async def test_the_proxys_own_lack_of_descriptors_is_never_charged_to_a_worker(
    start_workers: StartWorkers, start_proxy: StartProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    (worker,) = await start_workers(1)
    base_url = await start_proxy([worker], health={**FAST_HEALTH, "breaker_failures": 1})
    loop = asyncio.get_running_loop()
    real = loop.create_connection

    async def no_files(*args, **kwargs):
        # Only the proxy's request path names host and port; aiohttp's clients pass a socket.
        if args[2:3] == (worker.port,):
            raise OSError(24, "Too many open files")
        return await real(*args, **kwargs)

    monkeypatch.setattr(loop, "create_connection", no_files)
    status, body = await raw("POST", f"{base_url}/chat/completions", json.dumps(CHAT).encode())
    monkeypatch.undo()
    assert status == 503
    assert "Too many open files" in assert_openai_error(body, "proxy_out_of_resources")
    state = await worker_state(base_url, worker)
    assert (state["healthy"], state["breaker"], state["failures"]) == (True, "closed", 0)
    assert (await raw("POST", f"{base_url}/chat/completions", json.dumps(CHAT).encode()))[0] == 200


async def test_a_slow_client_is_disconnected(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    base_url = await start_proxy(await start_workers(1), limits={"client_timeout": 0.5})
    host, port = base_url.removeprefix("http://").removesuffix("/v1").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: proxy\r\n")
    async with asyncio.timeout(5):
        assert await reader.read() == b"", "a slow request head kept its connection"
    writer.close()
    head_only = post_head("/chat/completions", b"")[:-4].replace(
        b"Content-Length: 0", b"Content-Length: 100"
    )
    status, body = status_and_json(await raw_http(base_url, head_only + b"\r\n\r\n{", 5))
    assert status == 408
    assert_openai_error(body, "request_timeout")


# 10. What aiohttp's parser refuses is answered in OpenAI's shape.


@pytest.mark.parametrize(
    "request_bytes",
    [
        post_head("/chat/completions", b"{}", b"Transfer-Encoding: chunked"),
        post_head("/chat/completions", b"{}", b"X-Big: " + b"a" * 20_000),
        b"GET /v1/models HTTP/1.1\r\nHost: proxy\r\nBad Header\r\n\r\n",
    ],
    ids=["smuggling", "oversized-header", "malformed-header"],
)
async def test_malformed_http_gets_an_openai_error(
    start_workers: StartWorkers, start_proxy: StartProxy, request_bytes: bytes
) -> None:
    base_url = await start_proxy(await start_workers(1))
    status, body = status_and_json(await raw_http(base_url, request_bytes))
    assert status == 400
    assert "not valid HTTP" in assert_openai_error(body, "invalid_http")
    assert (await raw("GET", f"{base_url}/models"))[0] == 200


# 6. Memory bounded by bytes: stored conversations and session ids.


async def respond(http: aiohttp.ClientSession, base_url: str, **fields: Any) -> dict[str, Any]:
    """POST /v1/responses with `fields`: the response object."""
    body = orjson.dumps({"model": "mock-model", **fields})
    headers = {"Content-Type": "application/json"}
    async with http.post(f"{base_url}/responses", data=body, headers=headers) as answer:
        assert answer.status == 200, await answer.text()
        response: dict[str, Any] = await answer.json()
        return response


async def test_200_mb_of_conversations_and_session_ids_leave_memory_bounded() -> None:
    bound = str(16 * 1024**2)
    async with (
        MockWorker(responses_api=False) as worker,
        serve_process(worker.url, "--responses-store-bytes", bound) as (base_url, pid),
        aiohttp.ClientSession() as http,
    ):
        before = rss_mb(pid)
        for i in range(100):  # 2 MB of input each, every response stored
            await respond(http, base_url, input=f"{i} " + "x" * 2_000_000)
        stored = rss_mb(pid)
        for i in range(200):  # a distinct 1 MB session id each
            body = {**CHAT, "user": f"{i}" + "u" * 1_000_000}
            async with http.post(f"{base_url}/chat/completions", json=body) as answer:
                assert answer.status == 200
        sessions = rss_mb(pid)
    assert stored - before < 64, f"RSS grew from {before:.0f} to {stored:.0f} MB"
    assert sessions - stored < 32, f"RSS grew from {stored:.0f} to {sessions:.0f} MB"


async def test_the_responses_store_bound_holds_in_resident_memory() -> None:
    """Conversations of tiny items, whose parsed objects cost ten times their JSON, stay within
    a small multiple of the store's bound (they took eleven times it)."""
    bound_mb = 24
    items = [{"role": "user", "content": "x"}] * 40_000  # 1.2 MB of JSON
    async with (
        MockWorker(responses_api=False) as worker,
        serve_process(worker.url, "--responses-store-bytes", str(bound_mb * 1024**2)) as (url, pid),
        aiohttp.ClientSession() as http,
    ):
        for _ in range(6):  # what serving such requests takes, before anything is stored
            await respond(http, url, input=items, store=False)
        before = rss_mb(pid)
        made = [await respond(http, url, input=items) for _ in range(30)]
        grown = rss_mb(pid) - before
        async with http.get(f"{url}/responses/{made[0]['id']}") as oldest:
            assert oldest.status == 404  # past the bound, the least recently used went
        await respond(http, url, input="And?", previous_response_id=made[-1]["id"])
    assert len(worker.requests_to("/v1/chat/completions")[-1]["messages"]) == 40_002
    assert grown < 2 * bound_mb, f"RSS grew {grown:.0f} MB for a {bound_mb} MB store"


async def chain(http: aiohttp.ClientSession, url: str, turns: int, text: str) -> list[str]:
    """The ids of `turns` responses, each continuing the one before with `text`."""
    made = [(await respond(http, url, input=text))["id"]]
    for _ in range(turns - 1):
        made.append((await respond(http, url, input=text, previous_response_id=made[-1]))["id"])
    return made


async def test_a_chain_of_200_turns_holds_each_turn_once() -> None:
    """Every response of a chain keeps only the items it added: the store counts, and memory
    holds, the conversation once, not once per turn."""
    text = "x" * 20_000
    async with (
        MockWorker(responses_api=False) as worker,
        serve_process(worker.url, "--responses-store-bytes", str(40 * 1024**2)) as (url, pid),
        aiohttp.ClientSession() as http,
    ):
        # The first chain also grows the proxy's working memory to what serving one takes.
        made = await chain(http, url, 200, text)
        before = rss_mb(pid)
        made += await chain(http, url, 200, text)
        grown = rss_mb(pid) - before
        # Two chains of 4 MB fit 40 MB; counted per response (400 MB a chain) they did not.
        for response_id in made:
            async with http.get(f"{url}/responses/{response_id}") as kept:
                assert kept.status == 200 and (await kept.json())["id"] == response_id
    conversation = worker.requests_to("/v1/chat/completions")[-1]["messages"]
    assert len(conversation) == 399 and sum(len(m["content"]) for m in conversation) > 4_000_000
    assert grown < 3 * len(orjson.dumps(conversation)) / 1024**2, f"RSS grew {grown:.1f} MB"


async def test_an_expectation_other_than_continue_gets_an_openai_error(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    base_url = await start_proxy(await start_workers(1))
    body = json.dumps(CHAT).encode()
    status, error = status_and_json(
        await raw_http(base_url, post_head("/chat/completions", body, b"Expect: 0"))
    )
    assert status == 417 and "100-continue" in assert_openai_error(error, "expectation_failed")
    headers = {"Expect": "100-continue", "Content-Type": "application/json"}
    assert (await raw("POST", f"{base_url}/chat/completions", body, headers))[0] == 200
