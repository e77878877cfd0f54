"""`agent-eval view` answers only requests for the names it listens on: no DNS rebinding.

A page on another site that points its own name at 127.0.0.1 reaches the view, but its requests
carry that name in `Host`; they are refused, the page, its files and the API alike.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent_eval.view.hosts import AllowedHosts
from tests.helpers.view_runs import record, write_run

QUESTION = "A crate holds 16 bottles"  # in every transcript of the run served
PATHS = ("/", "/static/app.js", "/api/runs", "/api/runs/runs/done/samples/s1", "/api/nowhere")


@pytest.fixture
async def view(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[tuple[str, int]]:
    """`agent-eval view` over one finished run, on `--host` (the test's parameter) and a free
    port; yields the host and the port."""
    host = getattr(request, "param", "127.0.0.1")
    root = tmp_path / "runs"
    write_run(root / "done", [record("s1", 0, True), record("s1", 1, False)])
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agent_eval", "view", str(root), "--host", host, "--port", "0",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        yield host, await asyncio.wait_for(port_shown(process), 60)
    finally:
        process.terminate()
        await process.wait()


async def port_shown(process: asyncio.subprocess.Process) -> int:
    """The port in the URL the view prints (wrapped onto lines of its own when long)."""
    assert process.stdout is not None and process.stderr is not None
    while line := (await process.stdout.readline()).decode():
        if found := re.search(r"http://\S+:(\d+)/", line):
            return int(found.group(1))
    raise AssertionError(f"the view printed no URL: {(await process.stderr.read()).decode()}")


async def get(address: str, port: int, path: str, host: str | None) -> tuple[int, str]:
    """GET `path` with exactly this Host header (None: none, as HTTP/1.0 allows)."""
    reader, writer = await asyncio.open_connection(address, port)
    head = f"GET {path} HTTP/1.1\r\n" if host is not None else f"GET {path} HTTP/1.0\r\n"
    head += f"Host: {host}\r\n" if host is not None else ""
    writer.write(f"{head}Connection: close\r\n\r\n".encode())
    answer = await asyncio.wait_for(reader.read(), 30)
    writer.close()
    await writer.wait_closed()
    status_line, _, rest = answer.decode("utf-8", "replace").partition("\r\n")
    return int(status_line.split()[1]), rest


ANSWERED = (
    "127.0.0.1:{port}",
    "127.0.0.1",
    "localhost:{port}",
    "LocalHost",
    "localhost.",
    "[::1]:{port}",
    "[::1]",
)
REFUSED = (
    "evil.example:{port}",
    "evil.example",
    "127.0.0.1.nip.io:{port}",
    "localhost.evil.example",
    "evil.example@127.0.0.1:{port}",
    "127.0.0.1:{port}@evil.example",
    "[::1].evil.example",
    "",
    None,
)


async def test_the_names_it_listens_on_are_answered(view: tuple[str, int]) -> None:
    address, port = view
    for host in ANSWERED:
        header = host.format(port=port)
        answers = {path: await get(address, port, path, header) for path in PATHS}
        statuses = {path: status for path, (status, _) in answers.items()}
        assert statuses == {**dict.fromkeys(PATHS, 200), "/api/nowhere": 404}, header
        assert QUESTION in answers["/api/runs/runs/done/samples/s1"][1]


async def test_any_other_name_is_refused_on_every_route(view: tuple[str, int]) -> None:
    address, port = view
    for host in REFUSED:
        header = host.format(port=port) if host is not None else None
        for path in PATHS:
            status, rest = await get(address, port, path, header)
            assert status == 403, (header, path, rest)
            head, _, body = rest.partition("\r\n\r\n")
            assert "DNS rebinding" in json.loads(body)["error"]
            assert "X-Content-Type-Options: nosniff" in head
            assert QUESTION not in body


@pytest.mark.parametrize("view", ["127.0.0.2"], indirect=True)
async def test_the_host_it_was_given_is_answered_too(view: tuple[str, int]) -> None:
    address, port = view
    for host in (f"127.0.0.2:{port}", "localhost", f"evil.example:{port}"):
        status, _ = await get(address, port, "/api/runs", host)
        assert status == (403 if host.startswith("evil") else 200), host


def test_on_every_interface_addresses_and_this_machines_name_are_answered() -> None:
    hosts = AllowedHosts.bound_to("0.0.0.0")
    own = f"{socket.gethostname()}:7575"
    for header in ("192.168.1.5:7575", "[fe80::1]:7575", "10.0.0.7", "localhost:7575", own):
        assert hosts.allows(header), header
    for header in ("evil.example:7575", "192.168.1.5.nip.io", None):
        assert not hosts.allows(header), header
    assert not AllowedHosts.bound_to("127.0.0.1").allows("192.168.1.5:7575")
