"""Per-attempt keys: minted with the admin token, carried three ways, refused once ended or
expired or over a limit, and never shown."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import aiohttp
import orjson
import pytest
from openai import AsyncOpenAI, AuthenticationError, RateLimitError

from tests.helpers.attempts import ADMIN_TOKEN, attempt_client
from tests.helpers.proxy import MakeClient, StartProxy, StartWorkers
from tests.helpers.proxy_calls import assert_openai_error, metric_total, raw


async def _chat(client: AsyncOpenAI, content: str = "what is 2 + 2?") -> str | None:
    answer = await client.chat.completions.create(
        model="mock-model", messages=[{"role": "user", "content": content}]
    )
    return answer.choices[0].message.content


def _chat_body(content: str) -> bytes:
    return orjson.dumps({"model": "mock-model", "messages": [{"role": "user", "content": content}]})


async def test_each_carrier_attributes_calls_to_its_attempt(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    base_url = await start_proxy(await start_workers(1), admin_token=ADMIN_TOKEN)
    async with attempt_client(base_url) as attempts:
        by_bearer, by_path, by_header = [await attempts.open(f"s-{i}") for i in range(3)]
        got = [await _chat(make_client(by_bearer.base_url, api_key=by_bearer.key), "bearer")]
        got.append(await _chat(make_client(by_path.attempt_base_url), "path"))
        headers = {"x-api-key": by_header.key, "Content-Type": "application/json"}
        url = by_header.base_url + "/chat/completions"
        status, answer = await raw("POST", url, _chat_body("header"), headers)
        assert status == 200
        got.append(answer["choices"][0]["message"]["content"])
        records = [await attempts.end(a.key) for a in (by_bearer, by_path, by_header)]
    for record, said, label, content in zip(
        records, ("bearer", "path", "header"), ("s-0", "s-1", "s-2"), got, strict=True
    ):
        assert record["attempt"] == label and record["state"] == "ended"
        [call] = record["calls"]
        assert call["request"]["messages"][0]["content"] == said
        assert call["route"] == "/v1/chat/completions"
        assert call["status"] == 200 and call["error"] is None
        assert call["response"]["choices"][0]["message"]["content"] == content
        assert call["worker"] is not None and call["prompt_tokens"] > 0
        assert call["completion_tokens"] > 0 and call["ttft_s"] is None


async def test_a_key_is_refused_once_its_attempt_ended_or_expired(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    base_url = await start_proxy(await start_workers(1), admin_token=ADMIN_TOKEN)
    async with attempt_client(base_url) as attempts:
        ended, expiring = await attempts.open("ended"), await attempts.open("expiring", ttl_s=0.2)
        await _chat(make_client(base_url, api_key=ended.key))
        assert len((await attempts.end(ended.key))["calls"]) == 1
        with pytest.raises(AuthenticationError) as refused:
            await _chat(make_client(base_url, api_key=ended.key))
        assert refused.value.code == "attempt_key_closed"
        assert "has ended" in str(refused.value)
        await asyncio.sleep(0.3)
        with pytest.raises(AuthenticationError) as refused:
            await _chat(make_client(expiring.attempt_base_url))
        assert "has expired" in str(refused.value)
        record = await attempts.end(expiring.key)
    assert record["state"] == "ended" and record["calls"] == []
    status, body = await raw("GET", base_url.removesuffix("/v1") + f"/attempts/{ended.key}",
                             headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})  # fmt: skip
    assert status == 404
    assert_openai_error(body, "unknown_attempt")


async def test_limits_refuse_calls_and_the_record_says_so(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    base_url = await start_proxy(await start_workers(1), admin_token=ADMIN_TOKEN)
    async with attempt_client(base_url) as attempts:
        calls, tokens = (
            await attempts.open("calls", max_calls=2),
            await attempts.open("tokens", max_tokens=1),
        )
        client = make_client(base_url, api_key=calls.key)
        await _chat(client)
        await _chat(client)
        with pytest.raises(RateLimitError) as refused:
            await _chat(client)
        assert refused.value.code == "attempt_limit_exceeded"
        assert "max_calls" in str(refused.value)
        client = make_client(tokens.attempt_base_url)
        await _chat(client)  # the first call is let in: no token is used yet
        with pytest.raises(RateLimitError):
            await _chat(client)
        by_calls, by_tokens = await attempts.end(calls.key), await attempts.end(tokens.key)
    assert len(by_calls["calls"]) == 2 and by_calls["limit_exceeded"] == "max_calls"
    assert by_calls["refused_calls"] == 1
    assert len(by_tokens["calls"]) == 1 and by_tokens["limit_exceeded"] == "max_tokens"


async def test_a_record_is_bounded_in_bytes(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    capture = {"max_record_bytes": 1024}
    base_url = await start_proxy(await start_workers(1), admin_token=ADMIN_TOKEN, capture=capture)
    async with attempt_client(base_url) as attempts:
        opened = await attempts.open("big")
        client = make_client(opened.attempt_base_url)
        with pytest.raises(RateLimitError) as refused:
            for _ in range(10):
                await _chat(client, "x" * 600)
        assert "max_record_bytes" in str(refused.value)
        record = await attempts.end(opened.key)
    assert record["limit_exceeded"] == "max_record_bytes" and len(record["calls"]) == 1


async def test_minting_takes_the_admin_token(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    base_url = await start_proxy(await start_workers(1), admin_token=ADMIN_TOKEN)
    url = base_url.removesuffix("/v1") + "/attempts"
    body = orjson.dumps({"attempt": "a"})
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        status, answer = await raw("POST", url, body, headers)
        assert status == 401
        assert_openai_error(answer, "invalid_admin_token")
    status, answer = await raw("POST", url, b'{"attempt": "a", "limits": {"max_calls": 0}}',
                               {"Authorization": f"Bearer {ADMIN_TOKEN}"})  # fmt: skip
    assert status == 400
    assert "limits.max_calls" in assert_openai_error(answer, "invalid_attempt")


async def test_the_client_key_still_guards_all_but_what_an_attempt_key_opens(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    base_url = await start_proxy(
        await start_workers(1), admin_token=ADMIN_TOKEN, api_key="client-key"
    )
    root = base_url.removesuffix("/v1")
    async with attempt_client(base_url) as attempts:
        opened = await attempts.open("guarded")
        # The attempt key alone lets its calls in, and /v1/models.
        assert await _chat(make_client(base_url, api_key=opened.key))
        assert await _chat(make_client(opened.attempt_base_url, api_key="no-key"))
        models = await make_client(opened.attempt_base_url).models.list()
        assert [m.id for m in models.data] == ["mock-model"]
        bearer = {"Authorization": f"Bearer {opened.key}"}
        for method, path in (("GET", "/workers"), ("GET", f"/attempts/{opened.key}"),
                             ("POST", "/attempts"), ("GET", "/v1/responses/resp_1")):  # fmt: skip
            status, _ = await raw(method, root + path, b"{}", bearer)
            assert status == 401, f"an attempt key opened {method} {path}"
        with pytest.raises(AuthenticationError):
            await _chat(make_client(base_url, api_key="wrong"))
        assert await _chat(make_client(base_url, api_key="client-key"))
        record = await attempts.end(opened.key)
    assert len(record["calls"]) == 2  # /v1/models is not a call of the attempt


async def test_keys_are_never_shown(
    start_workers: StartWorkers,
    start_proxy: StartProxy,
    make_client: MakeClient,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    caplog.set_level(logging.DEBUG)
    base_url = await start_proxy(
        await start_workers(1), admin_token=ADMIN_TOKEN, record_dir=tmp_path
    )
    root = base_url.removesuffix("/v1")
    async with attempt_client(base_url) as attempts:
        opened = await attempts.open("secret-label")
        await _chat(make_client(opened.attempt_base_url))
        stream = await make_client(base_url, api_key=opened.key).chat.completions.create(
            model="mock-model", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        [chunk async for chunk in stream]
        status, _ = await raw("POST", f"{root}/a/{opened.key}/v1/nowhere", b"{}")
        assert status == 404
        status, workers = await raw("GET", root + "/workers")
        async with aiohttp.ClientSession() as http, http.get(root + "/metrics") as response:
            metrics = await response.text()
        record = await attempts.end(opened.key)
    assert len(record["calls"]) == 2
    files = await asyncio.to_thread(lambda: list(tmp_path.iterdir()))
    assert [f.name for f in files] == ["secret-label.jsonl"]
    # The proxy's logs and aiohttp's; the test's own clients log the URLs they call.
    logged = "\n".join(
        r.getMessage() for r in caplog.records if r.name.startswith(("agent_eval", "aiohttp"))
    )
    kept = await asyncio.to_thread(files[0].read_text)
    shown = [logged, orjson.dumps(workers).decode(), metrics, kept]
    shown.append(orjson.dumps(record).decode())
    for text in shown:
        assert opened.key not in text
    assert "secret-label" in logged  # the attempt is logged by its label


async def test_metrics_count_the_attempts_open(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    base_url = await start_proxy(await start_workers(1), admin_token=ADMIN_TOKEN)
    gauge = "agent_eval_proxy_attempts_open"
    assert await metric_total(base_url, gauge) == 0
    async with attempt_client(base_url) as attempts:
        first, second = await attempts.open("first"), await attempts.open("second")
        assert await metric_total(base_url, gauge) == 2
        await attempts.end(first.key)
        assert await metric_total(base_url, gauge) == 1
        await attempts.end(second.key)
    assert await metric_total(base_url, gauge) == 0
