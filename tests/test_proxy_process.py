"""The proxy in its own process: serves, keeps keys out of files, fails clearly, leaves nothing."""

from __future__ import annotations

import socket
from pathlib import Path

import openai
import pytest

from agent_eval.errors import ProxyStartError
from agent_eval.proxy.config import ProxyConfig
from agent_eval.proxy.server.process import proxy_process
from tests.helpers.processes import alive, listener_pid
from tests.helpers.proxy import FAST_HEALTH, MakeClient, StartWorkers
from tests.helpers.waits import wait_ready


async def test_serves_over_workers_and_stops_with_the_block(
    start_workers: StartWorkers, make_client: MakeClient, tmp_path: Path
) -> None:
    workers = await start_workers(2)
    config = ProxyConfig(endpoints=[w.url for w in workers], port=0, health=FAST_HEALTH)
    async with proxy_process(config, tmp_path) as base_url:
        await wait_ready(base_url, 2)
        answer = await make_client(base_url).chat.completions.create(
            model="mock-model", messages=[{"role": "user", "content": "hi"}]
        )
        assert answer.choices[0].message.content
        pid = listener_pid(base_url)
    assert pid is not None and not alive(pid)
    assert "proxy ready" not in (tmp_path / "proxy.log").read_text()


async def test_keys_reach_the_proxy_but_never_its_files(
    start_workers: StartWorkers, make_client: MakeClient, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("AGENT_EVAL_WORKER_API_KEY", "from-the-shell")  # must not leak in
    workers = await start_workers(1)
    config = ProxyConfig(
        endpoints=[workers[0].url], port=0, health=FAST_HEALTH, api_key="s3cret-key"
    )
    async with proxy_process(config, tmp_path) as base_url:
        await wait_ready(base_url, 1)
        with pytest.raises(openai.AuthenticationError):
            await make_client(base_url).models.list()
        await make_client(base_url, api_key="s3cret-key").chat.completions.create(
            model="mock-model", messages=[{"role": "user", "content": "hi"}]
        )
    for name in ("proxy.json", "proxy.log"):
        text = (tmp_path / name).read_text()
        assert "s3cret-key" not in text and "from-the-shell" not in text
    assert list(workers[0].stats.authorizations) == [None]  # no worker key: none sent


async def test_a_proxy_that_cannot_start_says_why(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        expected = f"exited during start-up:\nerror: cannot listen on 127.0.0.1:{port}"
        with pytest.raises(ProxyStartError, match=expected):
            async with proxy_process(ProxyConfig(port=port), tmp_path):
                pass
