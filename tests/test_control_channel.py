"""The control socket: in the run directory however long its path, for its owner alone, gone
when the run ends, never two runs on one directory; what a run that cannot act refuses."""

from __future__ import annotations

import asyncio
import socket
import stat
from pathlib import Path

import pytest

from agent_eval.results.files import RunDirectory
from agent_eval.run.control.actions import RunControl
from agent_eval.run.control.channel import ask, listening
from agent_eval.run.control.protocol import SOCKET, ControlError, Reply, Request
from tests.helpers.control_runs import idle_engine


async def answer(request: Request) -> Reply:
    return Reply(ok=True, message=f"did {request.action} {request.limit}")


async def test_a_run_directory_of_any_length_takes_requests_from_its_owner_alone(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / ("a-long-run-directory-name-" * 6)
    run_dir.mkdir()
    assert len(str(run_dir / SOCKET)) > 108  # longer than a Unix socket's address can be
    async with listening(run_dir, answer) as taken:
        assert taken
        assert stat.S_IMODE((run_dir / SOCKET).stat().st_mode) == 0o600
        reply = await ask(run_dir, Request(action="concurrency", limit=5))
        assert reply == Reply(ok=True, message="did concurrency 5")
    assert not (run_dir / SOCKET).exists()


async def test_a_second_run_on_the_directory_takes_no_requests_and_a_stale_socket_goes(
    tmp_path: Path,
) -> None:
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(tmp_path / SOCKET))
    stale.close()
    async with listening(tmp_path, answer) as first:
        assert first  # the socket a dead run left is replaced
        async with listening(tmp_path, answer) as second:
            assert not second
        # The second leaving does not take the first's socket away.
        assert (await ask(tmp_path, Request(action="status"))).message == "did status None"


async def test_a_request_that_is_no_request_is_answered_so(tmp_path: Path) -> None:
    async with listening(tmp_path, answer):
        reader, writer = await asyncio.open_unix_connection(tmp_path / SOCKET)
        writer.write(b'{"action": "explode"}\n')
        line = await reader.readline()
        writer.close()
    reply = Reply.model_validate_json(line)
    assert not reply.ok and reply.message.startswith("not a control request: action:"), reply


async def test_a_stopping_run_refuses_what_would_start_attempts(tmp_path: Path) -> None:
    engine = idle_engine()
    control = RunControl(engine, RunDirectory(tmp_path), list)
    assert (await control.handle(Request(action="cancel"))).message.startswith("cancelled")
    assert engine.cancelled and engine.stopping
    for request in (Request(action="resume"), Request(action="concurrency", limit=9)):
        with pytest.raises(ControlError, match="the run is stopping"):
            await control.handle(request)
    with pytest.raises(ControlError, match="finishing or stopping: none is requeued"):
        await control.handle(Request(action="requeue"))
