"""The proxy on N processes sharing one port: all serve, one dying ends them, none outlives."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client import multiprocess
from prometheus_client.parser import text_string_to_metric_families

from agent_eval.errors import ProxyExitedError, ProxyStartError
from agent_eval.proxy.admin_client import on_host, url_host
from agent_eval.proxy.config import ProxyConfig, default_processes
from agent_eval.proxy.server.process import ProxyGroup, proxy_group, serve_proxy
from agent_eval.testing.mock_worker import MockWorker
from tests.helpers.cli_runs import agent_eval, served_url_in
from tests.helpers.processes import alive, listener_pids
from tests.helpers.proxy import FAST_HEALTH, StartWorkers
from tests.helpers.waits import eventually, wait_ready

CHAT = {"model": "mock-model", "messages": [{"role": "user", "content": "hi"}]}


@contextlib.asynccontextmanager
async def two_ready(workers: list[MockWorker], run_dir: Path) -> AsyncIterator[ProxyGroup]:
    """Two proxy processes over `workers`, each ready: the group is ready when both are."""
    endpoints = [worker.url for worker in workers]
    config = ProxyConfig(endpoints=endpoints, port=0, health=FAST_HEALTH, processes=2)
    async with proxy_group(config, run_dir) as group:
        await wait_ready(group.base_url, len(workers))
        yield group


async def test_two_processes_listen_on_one_port_and_stop_with_the_block(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    workers = await start_workers(2)
    async with two_ready(workers, tmp_path) as group:
        pids = {process.pid for process in group.processes}
        assert len(pids) == 2 and listener_pids(group.base_url) == pids
        for _ in range(20):  # a connection each: the kernel spreads them over the processes
            async with (
                aiohttp.ClientSession() as http,
                http.post(group.base_url + "/chat/completions", json=CHAT) as answer,
            ):
                assert answer.status == 200
    assert not any(alive(pid) for pid in pids)
    assert sum(worker.stats.generation_requests for worker in workers) == 20
    assert "[proxy 0]" in (tmp_path / "proxy.log").read_text()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_serve_on_two_processes_prints_one_url_and_leaves_none_behind(
    start_workers: StartWorkers, tmp_path: Path, signum: signal.Signals
) -> None:
    workers = await start_workers(1)
    serve = await agent_eval(
        "serve", "--port", "0", "--processes", "2", "--endpoint", workers[0].url,
        "--run-dir", str(tmp_path / "logs"), cwd=tmp_path,
    )  # fmt: skip
    assert serve.stdout is not None
    first = (await asyncio.wait_for(serve.stdout.readline(), 120)).decode()
    assert "listening at" in first, first
    base_url = served_url_in(first)
    pids = listener_pids(base_url)
    assert len(pids) == 2 and serve.pid not in pids  # the children listen, the parent holds
    await wait_ready(base_url, 1)
    serve.send_signal(signum)
    out, _ = await asyncio.wait_for(serve.communicate(), 30)
    assert serve.returncode == 0
    assert "listening at" not in out.decode()  # one ready line for the group
    assert not any(alive(pid) for pid in pids)


async def test_a_process_that_exits_stops_the_group_and_says_which(tmp_path: Path) -> None:
    config = ProxyConfig(port=0, processes=2)
    ready: asyncio.Queue[str] = asyncio.Queue()
    serving = asyncio.create_task(
        serve_proxy(config, tmp_path, lambda url, _: ready.put_nowait(url))
    )
    base_url = await asyncio.wait_for(ready.get(), 60)
    pids = listener_pids(base_url)
    os.kill(min(pids), signal.SIGKILL)
    with pytest.raises(ProxyExitedError, match=r"proxy process \d exited with code -9"):
        await asyncio.wait_for(serving, 30)
    await eventually(lambda: not any(alive(pid) for pid in pids), 10, lambda: "a child lives on")


async def test_a_taken_port_says_what_to_do(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ProxyStartError, match=f"cannot listen on 127.0.0.1:{port}.*--port 0"):
            async with proxy_group(ProxyConfig(port=port, processes=2), tmp_path):
                pass


@pytest.mark.parametrize(("cores", "processes"), [(1, 1), (2, 1), (15, 1), (16, 2), (200, 8)])
def test_the_default_is_one_process_per_8_cores(
    cores: int, processes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: set(range(cores)))
    assert default_processes() == processes
    assert ProxyConfig().process_count() == processes
    assert ProxyConfig(processes=3).process_count() == 3


async def test_a_session_reaches_one_worker_whichever_process_takes_it(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    workers = await start_workers(3)
    sessions = [f"session-{i}" for i in range(12)]
    async with two_ready(workers, tmp_path) as group:
        for _ in range(4):  # each request on a connection of its own, to either process
            for session in sessions:
                async with (
                    aiohttp.ClientSession(headers={"X-Session-ID": session}) as http,
                    http.post(group.base_url + "/chat/completions", json=CHAT) as answer,
                ):
                    assert answer.status == 200
    homes: dict[str, set[str]] = {}
    for worker in workers:
        for headers in worker.stats.headers:
            homes.setdefault(headers["x-session-id"], set()).add(worker.url)
    assert set(homes) == set(sessions)
    assert all(len(urls) == 1 for urls in homes.values()), homes
    assert len({url for urls in homes.values() for url in urls}) > 1  # not all on one worker


async def test_metrics_add_up_every_process(start_workers: StartWorkers, tmp_path: Path) -> None:
    workers = await start_workers(2)
    async with two_ready(workers, tmp_path) as group:
        for _ in range(40):
            async with (
                aiohttp.ClientSession() as http,
                http.post(group.base_url + "/chat/completions", json=CHAT) as answer,
            ):
                assert answer.status == 200

        async def all_counted() -> bool:
            # A request is counted once its answer is sent: the last may trail its answer.
            return _sum(await _metrics(group.base_url), "agent_eval_proxy_requests") == 40

        await eventually(all_counted, 10, lambda: "the requests never added up to 40")
        scrapes = [await _metrics(group.base_url) for _ in range(6)]  # either process answers

        async def both_see_both_healthy() -> bool:
            # Per worker, the least healthy of the processes, each at most a second old.
            return _sum(await _metrics(group.base_url), "agent_eval_proxy_worker_healthy") == 2

        await eventually(both_see_both_healthy, 10, lambda: "a process saw a worker down")
        per_process = [
            _sum(multiprocess.MultiProcessCollector.merge([str(path)]), "agent_eval_proxy_requests")
            for path in (tmp_path / "proxy-metrics").glob("counter_*.db")
        ]
    assert sorted(per_process) == sorted(n for n in per_process if n > 0) and len(per_process) == 2
    assert sum(per_process) == 40  # both processes took requests, and the files hold them all
    for families in scrapes:
        assert _sum(families, "agent_eval_proxy_requests") == 40
        assert _sum(families, "agent_eval_proxy_request_seconds") == 40  # the histogram's count
        assert _sum(families, "agent_eval_proxy_prompt_tokens") > 0


async def _metrics(base_url: str) -> list[Any]:
    async with (
        aiohttp.ClientSession() as http,
        http.get(base_url.removesuffix("/v1") + "/metrics") as answer,
    ):
        return list(text_string_to_metric_families(await answer.text()))


def _sum(families: Iterable[Any], name: str) -> float:
    """The family's samples added up: a counter's total, a histogram's count."""
    wanted = {name, name + "_total", name + "_count"}
    return sum(
        sample.value
        for family in families
        if family.name == name
        for sample in family.samples
        if sample.name in wanted
    )


def test_a_wildcard_origin_names_the_host_the_proxy_is_reached_by() -> None:
    root = "http://10.0.0.5:8000"
    assert on_host("http://0.0.0.0:41000", url_host(root)) == "http://10.0.0.5:41000"
    assert on_host("http://[::]:41000/v1", "[fd00::5]") == "http://[fd00::5]:41000/v1"
    assert on_host("http://127.0.0.1:41000", "10.0.0.5") == "http://127.0.0.1:41000"
    assert url_host("http://[::1]:8000") == "[::1]"
