"""Fixtures: mock workers on real ports, a proxy in front of them, a headless browser, a
terminal, GSM8K perturbed; and the markers each collected test carries (helpers/markers.py)."""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio
from aiohttp.test_utils import TestClient, TestServer

from tests.helpers.browser import BrowserPage, Chromium, browser_page, chromium
from tests.helpers.gsm8k_variants import PerturbedGsm8k, perturbed_gsm8k
from tests.helpers.llamacpp import embedded_tokenizer, embedded_worker
from tests.helpers.markers import carry_xdist_groups, group_of, markers_of
from tests.helpers.proxy import (
    MakeAnthropic,
    MakeClient,
    StartProxy,
    StartWorkers,
    anthropic_maker,
    client_maker,
    proxy_starter,
    worker_starter,
)
from tests.helpers.slurm import require_slurm
from tests.helpers.terminal import OnTerminal, terminal

if TYPE_CHECKING:
    from llama_cpp import Llama
    from ray.cluster_utils import Cluster


SHARED_LOOP = "session"
"""The event loop a browser test runs in: the one Playwright and Chromium were started in, once per
test process (Playwright's objects answer only in the loop they were made in)."""


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_fixture_setup(
    fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
) -> Iterator[Any]:
    """A browser test's async fixtures (its view server, its exit stack) run in its loop too:
    pytest-asyncio reads a fixture's loop from the `_loop_scope` its own decorator sets."""
    func = fixturedef.func
    shared = (
        fixturedef.scope == "function"
        and request.node.get_closest_marker("browser") is not None
        and (inspect.iscoroutinefunction(func) or inspect.isasyncgenfunction(func))
    )
    if not shared:
        return (yield)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(func, "_loop_scope", SHARED_LOOP, raising=False)
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> Iterator[None]:
    """Mark each test by what it uses (browser, tmux, llamacpp, ray, slurm, slow) and put the
    tests that must not run beside each other in one xdist group, before any plugin reads
    them (xdist's worker names each test by its group in a hook of its own)."""
    for item in items:
        if not isinstance(item, pytest.Function):
            continue
        markers = markers_of(item)
        for name in sorted(markers):
            item.add_marker(name)
        if "browser" in markers and inspect.iscoroutinefunction(item.obj):
            # Before the plain asyncio marker auto mode gave it, so that this one is the closest.
            item.add_marker(pytest.mark.asyncio(loop_scope=SHARED_LOOP), append=False)
        group = group_of(item, markers)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    yield
    carry_xdist_groups(items)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After the last Ray test in a row (the ray xdist group runs as one), stop the cluster
    they shared (helpers/ray_cluster.py), once the fixtures connected to it are done."""
    yield
    shared = sys.modules.get("tests.helpers.ray_cluster")
    if shared is not None and (nextitem is None or nextitem.get_closest_marker("ray") is None):
        shared.SHARED.stop()


@pytest.fixture
def ray_cluster() -> Cluster:
    """The session's local Ray cluster (helpers/ray_cluster.py): a head without CPUs and two
    nodes of one CPU and two GPUs each, started at the first Ray test that asks."""
    # Imported here: ray takes a while to import, and the xdist controller imports conftest.
    from tests.helpers.ray_cluster import SHARED

    return SHARED.up()


@pytest.fixture
async def stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as exits:
        yield exits


@pytest_asyncio.fixture(scope="session", loop_scope=SHARED_LOOP)
async def shared_chromium() -> AsyncIterator[Chromium]:
    """Playwright and one headless Chromium for this test process (helpers/browser.py)."""
    async with chromium() as shared:
        yield shared


@pytest_asyncio.fixture(loop_scope=SHARED_LOOP)
async def browser(shared_chromium: Chromium) -> AsyncIterator[BrowserPage]:
    """A page in a browser context of its own; skipped without Chromium or playwright."""
    async with browser_page(shared_chromium) as page:
        yield page


@pytest.fixture
async def on_terminal(tmp_path: Path) -> AsyncIterator[OnTerminal]:
    """Commands on a real terminal, tmux (helpers/terminal.py); skipped without tmux."""
    async with terminal(f"agent-eval-test-{os.getpid()}-{id(tmp_path)}") as run:
        yield run


@pytest.fixture(scope="session")
def embedded_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One embedded llama.cpp worker (helpers/llamacpp.py) for every test that asks, started
    once: loading the model takes seconds, and under xdist the llamacpp tests share a process."""
    with embedded_worker(tmp_path_factory.mktemp("llama") / "worker.log") as url:
        yield url


@pytest.fixture(scope="session")
def embedded_vocab() -> Llama:
    """The embedded model's tokenizer, without its weights."""
    return embedded_tokenizer()


@pytest.fixture
def slurm_here() -> None:
    """Skips a test without a Slurm cluster here (helpers/slurm.py `needs_slurm`)."""
    require_slurm()


@pytest.fixture
async def client(root: Path) -> AsyncIterator[TestClient[Any, Any]]:
    """The view's app over the module's `root` folder of runs, with a test client."""
    # Imported here, not with conftest: xdist's controller imports conftest before it starts
    # the workers, and runs no test.
    from agent_eval.view.server import create_app

    async with TestClient(TestServer(create_app([root]))) as test_client:
        yield test_client


@pytest.fixture
def start_workers(stack: AsyncExitStack) -> StartWorkers:
    """Start n mock workers named w0, w1, ...; they stop after the test."""
    return worker_starter(stack)


@pytest.fixture
def make_client(stack: AsyncExitStack) -> MakeClient:
    """An AsyncOpenAI client for a proxy (with a session header if given), closed after the test."""
    return client_maker(stack)


@pytest.fixture
def make_anthropic(stack: AsyncExitStack) -> MakeAnthropic:
    """An AsyncAnthropic client for a proxy's base URL, closed after the test."""
    return anthropic_maker(stack)


@pytest.fixture
def start_proxy(stack: AsyncExitStack) -> StartProxy:
    """Start a proxy (free port) over the given workers or URLs; returns its base URL (/v1)."""
    return proxy_starter(stack)


@pytest.fixture(scope="session")
def gsm8k_variants() -> PerturbedGsm8k:
    """GSM8K's test set perturbed with seed 0, once for the tests that read it whole."""
    return perturbed_gsm8k()
