"""The view's control of a running run: a POST with the view's token from its own page, sent
on to the run's control socket; nothing else changes a run (no GET, no other site, no token)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from agent_eval.run.control.channel import listening
from agent_eval.run.control.protocol import Reply, Request, RunState
from agent_eval.view.control import TOKEN_HEADER, ViewControl
from agent_eval.view.server import create_app
from tests.helpers.view_runs import get_json, record, write_run

TOKEN = "t0ken-for-this-test"
STATE = RunState(
    in_flight=2, limit=4, paused=False, stopping=False, done=3, total=20, requeued=0
)  # fmt: skip


class FakeRun:
    """The run's end of the socket: what it was asked, answered as a running run would."""

    def __init__(self) -> None:
        self.asked: list[Request] = []

    async def handle(self, request: Request) -> Reply:
        self.asked.append(request)
        if request.action == "concurrency" and request.limit == 99:
            return Reply(ok=False, message="the run is stopping: no attempt starts any more")
        return Reply(ok=True, message=f"did {request.action}", state=STATE)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    write_run(runs / "live", [record("q1", 0, True)], finished=False)
    write_run(runs / "idle", [record("q1", 0, True)], finished=False)
    return runs


@pytest.fixture
async def fake(root: Path) -> AsyncIterator[FakeRun]:
    run = FakeRun()
    async with listening(root / "live", run.handle) as taken:
        assert taken
        yield run


async def client_of(root: Path, control: ViewControl) -> TestClient[Any, Any]:
    client = TestClient(TestServer(create_app([root], control=control)))
    await client.start_server()
    return client


@pytest.fixture
async def client(root: Path) -> AsyncIterator[TestClient[Any, Any]]:
    client = await client_of(root, ViewControl(TOKEN))
    yield client
    await client.close()


def own_page(client: TestClient[Any, Any], token: str = TOKEN) -> dict[str, str]:
    """The headers the view's own page sends with an action."""
    origin = f"http://{client.server.host}:{client.server.port}"
    return {TOKEN_HEADER: token, "Origin": origin}


URL = "/api/runs/runs%2Flive/control"


async def test_an_action_from_the_page_reaches_the_run(
    client: TestClient[Any, Any], fake: FakeRun
) -> None:
    response = await client.post(URL, json={"action": "pause"}, headers=own_page(client))
    assert response.status == 200, await response.text()
    assert await response.json() == {"message": "did pause", "state": STATE.model_dump()}
    response = await client.post(
        URL, json={"action": "concurrency", "limit": 6}, headers=own_page(client)
    )
    assert response.status == 200
    assert [(r.action, r.limit) for r in fake.asked] == [("pause", None), ("concurrency", 6)]
    # What the run refuses is a 409 with its message.
    response = await client.post(
        URL, json={"action": "concurrency", "limit": 99}, headers=own_page(client)
    )
    assert response.status == 409
    assert (await response.json())["error"] == "the run is stopping: no attempt starts any more"


async def test_get_reads_the_state_and_changes_nothing(
    client: TestClient[Any, Any], fake: FakeRun
) -> None:
    body = await get_json(client, URL)
    assert body == {
        "enabled": True, "running": True, "message": "did status", "state": STATE.model_dump()
    }  # fmt: skip
    # Whatever a GET's query says, it only asks for the status.
    await get_json(client, URL + "?action=cancel")
    assert [r.action for r in fake.asked] == ["status", "status"]
    idle = await get_json(client, "/api/runs/runs%2Fidle/control")
    assert idle["running"] is False and "is not running" in idle["message"]


@pytest.mark.parametrize(
    ("headers", "why"),
    [
        ({}, "needs the view's token"),
        ({TOKEN_HEADER: "wrong"}, "needs the view's token"),
        ({TOKEN_HEADER: TOKEN}, "from the view's own page, not None"),
        ({TOKEN_HEADER: TOKEN, "Origin": "http://evil.example"}, "not http://evil.example"),
        ({TOKEN_HEADER: TOKEN, "Origin": "null"}, "not null"),
    ],
)
async def test_an_action_without_the_token_or_from_another_origin_is_refused(
    client: TestClient[Any, Any], fake: FakeRun, headers: dict[str, str], why: str
) -> None:
    response = await client.post(URL, json={"action": "cancel"}, headers=headers)
    assert response.status == 403
    assert why in (await response.json())["error"]
    assert fake.asked == []


async def test_a_page_for_another_host_is_refused(
    client: TestClient[Any, Any], fake: FakeRun
) -> None:
    headers = {**own_page(client), "Host": "rebound.example", "Origin": "http://rebound.example"}
    response = await client.post(URL, json={"action": "cancel"}, headers=headers)
    assert response.status == 403
    assert fake.asked == []


async def test_a_view_without_control_refuses_every_action(root: Path, fake: FakeRun) -> None:
    client = await client_of(root, ViewControl(None))
    try:
        response = await client.post(URL, json={"action": "pause"}, headers=own_page(client))
        assert response.status == 403
        assert "start it with --control" in (await response.json())["error"]
        assert (await get_json(client, URL))["enabled"] is False
    finally:
        await client.close()
    assert [r.action for r in fake.asked] == ["status"]


async def test_bad_actions_and_idle_runs_are_named(
    client: TestClient[Any, Any], fake: FakeRun
) -> None:
    for body in [b"not json", b'{"action": "explode"}', b'{"action": "concurrency", "limit": 0}']:
        response = await client.post(URL, data=body, headers=own_page(client))
        assert response.status == 400, body
        assert "not a control action" in (await response.json())["error"]
    idle = "/api/runs/runs%2Fidle/control"
    response = await client.post(idle, json={"action": "pause"}, headers=own_page(client))
    assert response.status == 409 and "is not running" in (await response.json())["error"]
    response = await client.post(
        "/api/runs/runs%2Fnone/control", json={"action": "pause"}, headers=own_page(client)
    )
    assert response.status == 404
    assert fake.asked == []
