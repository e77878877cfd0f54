"""What a client can get wrong, the admin API, keys, metrics and recording."""

from __future__ import annotations

import json
import random
from pathlib import Path

import aiohttp
import pytest

from agent_eval.proxy.recorder import session_file_name
from tests.helpers.proxy import MakeClient, StartProxy, StartWorkers
from tests.helpers.proxy_calls import CHAT, assert_openai_error, metric_total, raw
from tests.helpers.waits import eventually, until


@pytest.mark.parametrize(
    ("data", "detail"),
    [(b"{not json", "not a JSON object"), (b"[1, 2]", "JSON list"), (b"", "not a JSON")],
)
async def test_body_that_is_not_a_json_object_gets_400(
    start_workers: StartWorkers, start_proxy: StartProxy, data: bytes, detail: str
) -> None:
    base_url = await start_proxy(await start_workers(1))
    status, body = await raw("POST", f"{base_url}/chat/completions", data)
    assert status == 400
    assert detail in assert_openai_error(body, "invalid_json")


async def test_body_over_the_limit_gets_413(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    (worker,) = await start_workers(1)
    base_url = await start_proxy([worker], max_body_bytes=4096)
    big = json.dumps({**CHAT, "padding": "x" * 10_000}).encode()
    status, body = await raw("POST", f"{base_url}/chat/completions", big)
    assert status == 413
    assert "--max-body-bytes" in assert_openai_error(body, "body_too_large")

    async def chunks():  # no Content-Length: the limit holds while reading
        yield big

    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{base_url}/chat/completions", data=chunks()) as r,
    ):
        assert r.status == 413
    assert worker.stats.generation_requests == 0


async def test_unknown_path_gets_404_and_wrong_method_405(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    base_url = await start_proxy(await start_workers(1))
    status, body = await raw("GET", f"{base_url}/embeddings")
    assert status == 404
    assert "/v1/chat/completions" in assert_openai_error(body, "unknown_route")
    status, body = await raw("GET", f"{base_url}/chat/completions")
    assert status == 405
    assert "POST" in assert_openai_error(body, "method_not_allowed")


async def test_no_healthy_worker_gets_503(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    (worker,) = await start_workers(1)
    base_url = await start_proxy([worker])
    worker.behavior.healthy = False
    await until(lambda b: not b["workers"][0]["healthy"], base_url, "/workers")
    status, body = await raw("POST", f"{base_url}/chat/completions", json.dumps(CHAT).encode())
    assert status == 503
    assert "GET /workers" in assert_openai_error(body, "no_healthy_worker")
    status, _ = await raw("GET", base_url.removesuffix("/v1") + "/readiness")
    assert status == 503
    status, _ = await raw("GET", base_url.removesuffix("/v1") + "/health")
    assert status == 200, "liveness must not depend on workers"


async def test_garbage_never_crashes_the_proxy(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    base_url = await start_proxy(await start_workers(1))
    rng = random.Random(1)
    bodies = [bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 300))) for _ in range(30)]
    bodies += [
        b'{"model": 5, "stream": "yes", "user": [1]}',
        b'{"messages": null}',
        b"null",
        b'"text"',
    ]
    async with aiohttp.ClientSession() as http:
        for data in bodies:
            async with http.post(f"{base_url}/chat/completions", data=data) as response:
                assert response.status in (200, 400), data
                await response.read()
    answer = await make_client(base_url).chat.completions.create(**CHAT)
    assert answer.choices[0].message.content


async def test_workers_can_be_added_and_removed_at_run_time(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    first, second = await start_workers(2)
    base_url = await start_proxy([first], admin_token="admin")
    admin = base_url.removesuffix("/v1") + "/workers"
    token = {"Authorization": "Bearer admin"}

    async def change(method: str, url: str, fields: dict | None = None) -> tuple[int, dict]:
        return await raw(method, url, json.dumps(fields).encode() if fields else None, token)

    status, added = await change("POST", admin, {"url": second.url + "/v1/"})
    assert status == 201 and added["url"] == second.url and added["healthy"] is True
    status, body = await change("POST", admin, {"url": second.url})
    assert status == 409 and "already" in assert_openai_error(body, "worker_exists")
    status, body = await change("POST", admin, {"url": "ftp://nowhere"})
    assert status == 400 and "http" in assert_openai_error(body, "invalid_worker_url")
    status, body = await change("POST", admin, {"url": "http://127.0.0.1:9", "health_path": "h"})
    assert status == 400 and "starting with one '/'" in assert_openai_error(
        body, "invalid_worker_url"
    )

    status, removed = await change("DELETE", f"{admin}?url={first.url}")
    assert status == 200 and removed["url"] == first.url
    for _ in range(3):
        answer = await make_client(base_url).chat.completions.create(**CHAT)
        assert answer.system_fingerprint == second.name
    status, body = await change("DELETE", admin, {"url": first.url})
    assert status == 404 and "no worker" in assert_openai_error(body, "unknown_worker")
    _, listing = await raw("GET", admin)
    assert [w["url"] for w in listing["workers"]] == [second.url]
    assert set(listing["workers"][0]) >= {"healthy", "breaker", "in_flight", "served", "failures"}


async def test_api_key_guards_v1_and_admin_routes(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    (worker,) = await start_workers(1)
    base_url = await start_proxy([worker], api_key="s3cret", worker_api_key="worker-key")
    root = base_url.removesuffix("/v1")
    for method, url in (
        ("POST", f"{base_url}/chat/completions"),
        ("GET", f"{base_url}/models"),
        ("GET", f"{root}/workers"),
    ):
        status, body = await raw(
            method, url, json.dumps(CHAT).encode(), {"Authorization": "Bearer wrong"}
        )
        assert status == 401, url
        assert_openai_error(body, "invalid_api_key")
    assert (await raw("GET", f"{root}/health"))[0] == 200
    keyed = make_client(base_url, api_key="s3cret")
    assert (await keyed.chat.completions.create(**CHAT)).choices[0].message.content
    assert worker.stats.authorizations[-1] == "Bearer worker-key", (
        "the client's key leaked to the worker"
    )


async def test_metrics_count_requests_and_latency(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    base_url = await start_proxy(await start_workers(2))
    openai = make_client(base_url)
    for _ in range(3):
        await openai.chat.completions.create(**CHAT)
    stream = await openai.chat.completions.create(**CHAT, stream=True)
    async for _ in stream:
        pass
    assert await metric_total(base_url, "agent_eval_proxy_requests") == 4
    async with (
        aiohttp.ClientSession() as http,
        http.get(base_url.removesuffix("/v1") + "/metrics") as r,
    ):
        text = await r.text()
    for family in (
        "agent_eval_proxy_request_seconds_bucket",
        "agent_eval_proxy_stream_first_byte_seconds_count",
        "agent_eval_proxy_worker_in_flight",
        "agent_eval_proxy_worker_healthy",
        "agent_eval_proxy_worker_breaker_state",
    ):
        assert family in text


async def test_record_writes_each_exchange_per_session(
    start_workers: StartWorkers, start_proxy: StartProxy, tmp_path: Path, make_client: MakeClient
) -> None:
    base_url = await start_proxy(await start_workers(2), record_dir=tmp_path)
    await make_client(base_url, "math-7").chat.completions.create(**CHAT)
    stream = await make_client(base_url, "math-7").chat.completions.create(
        **CHAT, stream=True, stream_options={"include_usage": True}
    )
    streamed = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    await make_client(base_url, "../../etc/passwd").chat.completions.create(**CHAT)
    await eventually(lambda: sum(map(len, _recorded(tmp_path).values())) == 3)
    files = _recorded(tmp_path)
    plain, assembled = files.pop("math-7.jsonl")
    assert plain["status"] == 200 and plain["worker"] and plain["usage"]["total_tokens"] > 0
    assert plain["request"]["messages"] == CHAT["messages"]
    assert assembled["response"]["choices"][0]["message"]["content"] == streamed
    assert assembled["usage"]["completion_tokens"] > 0
    (traversal,) = files
    assert "/" not in traversal and not traversal.startswith(".")


def test_session_file_names_are_safe_and_distinct() -> None:
    names = [session_file_name(s) for s in ("a/b", "a_b", "..", "../x", "", None, "ok-1.2")]
    assert names[-1] == "ok-1.2.jsonl"
    assert len(set(names[:2])) == 2, "two ids collided after cleaning"
    for name in names:
        assert "/" not in name and not name.startswith(".") and name.endswith(".jsonl")


def _recorded(directory: Path) -> dict[str, list[dict]]:
    """Each file the recorder wrote under `directory` (searched recursively), as parsed lines."""
    return {
        str(path.relative_to(directory)): [
            json.loads(line) for line in path.read_text().splitlines()
        ]
        for path in directory.rglob("*.jsonl")
    }
