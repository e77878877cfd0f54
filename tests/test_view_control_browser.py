"""A running run's control buttons in a real browser: a view started with control, a real run
over a mock worker; pause, concurrency, resume and cancel reach the run, the page shows its
state, and a page opened without the token shows no button."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from aiohttp import web

from agent_eval.run.control.channel import ask
from agent_eval.run.control.protocol import SOCKET, Request
from agent_eval.testing.mock_worker import MockWorker
from agent_eval.view.control import ViewControl
from agent_eval.view.server import create_app
from tests.helpers.browser import BrowserPage
from tests.helpers.cli_runs import agent_eval, finish, write_dataset
from tests.helpers.proxy import StartWorkers
from tests.helpers.view_runs import run_route
from tests.helpers.waits import eventually


@asynccontextmanager
async def controlling_view(root: Path, control: ViewControl) -> AsyncIterator[str]:
    """The view over `root`, started with control, on a free port; its address as printed."""
    runner = web.AppRunner(create_app([root], control=control), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    try:
        yield control.page_url(f"http://{host}:{port}/")
    finally:
        await runner.cleanup()


async def test_the_buttons_pause_resize_resume_and_cancel_a_running_run(
    start_workers: StartWorkers, tmp_path: Path, browser: BrowserPage
) -> None:
    (worker,) = await start_workers(1)
    worker.behavior.hang = True  # the run stays running, two attempts in flight
    runs, data = tmp_path / "runs", write_dataset(tmp_path / "say.jsonl")
    run_dir = runs / "live"
    args = ("--dataset", str(data), "--endpoint", worker.url, "-j", "2", "-o", str(run_dir))
    process = await agent_eval("run", *args, cwd=tmp_path)
    try:
        await played_from_the_page(process, worker, run_dir, runs, browser)
    finally:
        if process.returncode is None:  # the test failed: no run outlives it
            process.terminate()
            await process.wait()


async def played_from_the_page(
    process: asyncio.subprocess.Process,
    worker: MockWorker,
    run_dir: Path,
    runs: Path,
    browser: BrowserPage,
) -> None:
    from playwright.async_api import expect

    await eventually(lambda: (run_dir / SOCKET).exists(), 120, lambda: f"no {SOCKET}")
    await worker.gate.wait_for_arrivals(2)

    control = ViewControl.enabled(True)
    async with controlling_view(runs, control) as address:
        page = browser.page
        await page.goto(address + run_route("runs/live"))
        state = page.locator("#control-state")
        await expect(state).to_contain_text("running · 2 in flight · at most 2 at once")
        assert "control=" not in page.url  # the token left the address bar and the history

        await page.click("#control-pause")
        await expect(state).to_contain_text("paused")
        reply = await ask(run_dir, Request(action="status"))
        assert reply.state is not None and reply.state.paused

        await page.fill("#control-limit", "3")
        await page.click("#control-concurrency")
        await expect(state).to_contain_text("at most 3 at once")
        await page.click("#control-resume")
        await expect(state).to_contain_text("running")
        reply = await ask(run_dir, Request(action="status"))
        assert reply.state is not None and not reply.state.paused and reply.state.limit == 3

        # Another tab, opened without the token: the state shows, no button does.
        browser_app = page.context.browser
        assert browser_app is not None
        other = await browser_app.new_page()
        await other.goto(address.split("?")[0] + run_route("runs/live"))
        await expect(other.locator("#control-state")).to_contain_text("at most 3 at once")
        await expect(other.locator("#control-buttons")).to_be_hidden()

        await page.click("#control-cancel")
        await expect(page.locator("#control-message")).to_contain_text("cancelled")
        worker.behavior.hang = False
        code, _, err = await finish(process)
        assert code == 130, err
        assert "cancelled by agent-eval ctl" in err
        await expect(page.locator("#control-section")).to_be_hidden()
    assert browser.errors == []
