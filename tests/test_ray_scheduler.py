"""The Ray scheduler on real Ray clusters: start, wait, fail early, stop with nothing left.

Most tests join the session's cluster (helpers/ray_cluster.py: two nodes of one CPU and two GPUs
each); the first test has the scheduler start (and stop) a local cluster of its own.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
import ray
from ray.cluster_utils import Cluster

from agent_eval.allocation import Allocation
from agent_eval.backends import WorkerConfig
from agent_eval.errors import ConfigError
from agent_eval.schedulers.base import PORT_RELAUNCHES
from agent_eval.schedulers.errors import (
    GPUAllocationError,
    SchedulerUnavailableError,
    WorkerFailedError,
)
from agent_eval.schedulers.ports import WORKER_PORTS
from agent_eval.schedulers.ray_cluster import (
    PlacementError,
    RayScheduler,
    format_bundle,
    placement_problem,
    refuse_spanning,
)
from agent_eval.testing.mock_backend import MockBackend
from agent_eval.testing.ports import free_port
from tests.helpers.processes import alive, answers, described
from tests.helpers.waits import eventually

MOCKS = Allocation("mock", dp=2)


class GPUMockBackend(MockBackend):
    """Mock workers that ask for GPUs, as SGLang would."""

    needs_gpus = True


def parent_of(pid: int) -> int:
    """The process that started `pid` (for a server: its Ray actor)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rpartition(")")[2].split()[1])


def live_groups() -> list[str]:
    """Ids of the placement groups the cluster still holds."""
    table = ray.util.placement_group_table()
    return [g["placement_group_id"] for g in table.values() if g["state"] != "REMOVED"]


@pytest.fixture
def cluster(ray_cluster: Cluster) -> str:
    """The address of the session's cluster (helpers/ray_cluster.py): two CPUs and four GPUs
    (as Ray counts them) over two nodes."""
    return ray_cluster.address


@pytest.fixture
def connected(cluster: str) -> Iterator[str]:
    """This process joined to the cluster, so a test can look at it; the scheduler shares it."""
    ray.init(address=cluster, log_to_driver=False)
    try:
        yield cluster
    finally:
        ray.shutdown()


async def test_starts_answers_and_stops_with_nothing_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The module's cluster has no token auth, and a process that ran a token-auth cluster
    # cannot own actors on one without (Ray 2.60): the same mode for both.
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    scheduler = RayScheduler(tmp_path)
    async with scheduler:
        workers = await scheduler.launch(MockBackend(), WorkerConfig(), MOCKS)
        assert ray.is_initialized()
        await scheduler.wait_ready(timeout=60)
        pids = scheduler.pids
        assert all([await answers(w.url, "/v1/models") for w in workers])
        assert all(w.host == ray.util.get_node_ip_address() for w in workers)
        assert all(w.log.parent == tmp_path / "workers" for w in workers)
        assert all(alive(pid) for pid in pids)
    assert not any(alive(pid) for pid in pids)
    assert not ray.is_initialized()


async def test_a_port_taken_before_the_server_binds_it_gets_a_relaunch(
    tmp_path: Path,
    connected: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    chosen = RayScheduler._address
    snatched: list[int] = []

    def snatching(self: RayScheduler, actor: ray.actor.ActorHandle) -> tuple[str, int]:
        host, port = chosen(self, actor)
        if not snatched:  # another program takes the first port before its server binds it
            held.enter_context(socket.create_server((host, port)))
            snatched.append(port)
        return host, port

    monkeypatch.setattr(RayScheduler, "_address", snatching)
    caplog.set_level(logging.WARNING, "agent_eval.schedulers.base")
    with ExitStack() as held:
        async with RayScheduler(tmp_path, connected) as scheduler:
            first, second = await scheduler.launch(MockBackend(), WorkerConfig(), MOCKS)
            await scheduler.wait_ready(timeout=60)
            assert await answers(first.url, "/v1/models")
            assert first.port in WORKER_PORTS and first.port not in (*snatched, second.port)
            assert first.log == tmp_path / "workers" / "worker-0.relaunch-1.log"
    assert "address already in use" in (tmp_path / "workers" / "worker-0.log").read_text()
    (warning,) = caplog.messages
    assert f"worker 0 found port {snatched[0]} taken" in warning
    assert f"relaunched it on port {first.port} (relaunch 1 of {PORT_RELAUNCHES})" in warning
    assert live_groups() == []


async def test_workers_publish_the_address_of_the_interface_named(
    tmp_path: Path, connected: str
) -> None:
    async with RayScheduler(tmp_path, connected, interface="lo") as scheduler:
        (worker,) = await scheduler.launch(MockBackend(), WorkerConfig(), Allocation("mock"))
        await scheduler.wait_ready(timeout=60)
        assert worker.host == "127.0.0.1" and await answers(worker.url, "/v1/models")


async def test_an_interface_without_ipv4_is_a_clear_error(tmp_path: Path, connected: str) -> None:
    scheduler = RayScheduler(tmp_path, connected, interface="nosuch0")
    with pytest.raises(
        ConfigError, match=r"interface 'nosuch0' has no IPv4 address on node .*; its interfaces: lo"
    ):
        await scheduler.launch(MockBackend(), WorkerConfig(), Allocation("mock"))
    assert live_groups() == []


async def test_worker_that_crashes_fails_the_wait_with_its_log(
    tmp_path: Path, connected: str
) -> None:
    config = WorkerConfig(extra_args=["--no-such-flag"])
    async with RayScheduler(tmp_path, connected) as scheduler:
        await scheduler.launch(MockBackend(), config, MOCKS)
        pids = scheduler.pids
        with pytest.raises(WorkerFailedError) as error:
            await scheduler.wait_ready(timeout=60)
    message = str(error.value)
    assert "exited with code 2" in message
    assert "unrecognized arguments: --no-such-flag" in message
    assert str(tmp_path / "workers") in message
    assert not any(alive(pid) for pid in pids)
    assert live_groups() == []


async def test_more_gpus_than_the_cluster_has_is_refused(tmp_path: Path, connected: str) -> None:
    scheduler = RayScheduler(tmp_path, connected)
    with pytest.raises(
        GPUAllocationError,
        match=r"3 bundles of \{GPU: 2, CPU: 1\} \(mock:d3t2p1\) cannot be placed: "
        r"the cluster has GPU: 4",
    ):
        await scheduler.launch(GPUMockBackend(), WorkerConfig(), Allocation("mock", dp=3, tp=2))
    assert scheduler.workers == []
    assert live_groups() == []


async def test_busy_cluster_times_out_placing(tmp_path: Path, connected: str) -> None:
    holder = ray.util.placement_group([{"CPU": 1}, {"CPU": 1}])  # one on each node
    ray.get(holder.ready(), timeout=30)
    try:
        scheduler = RayScheduler(tmp_path, connected, placement_timeout=1)
        with pytest.raises(
            PlacementError, match=r"could not be placed within 1 s; free now: \{CPU: 0\}"
        ):
            await scheduler.launch(MockBackend(), WorkerConfig(), Allocation("mock"))
        assert live_groups() == [holder.id.hex()]
    finally:
        ray.util.remove_placement_group(holder)


async def test_missing_program_is_a_clear_error(tmp_path: Path, connected: str) -> None:
    scheduler = RayScheduler(tmp_path, connected)
    with pytest.raises(ConfigError, match=r"'/no/such/python' on .*: no such program"):
        await scheduler.launch(
            MockBackend(python="/no/such/python"), WorkerConfig(), Allocation("mock")
        )
    assert live_groups() == []


async def test_a_joined_cluster_is_left_running(tmp_path: Path, cluster: str) -> None:
    async with RayScheduler(tmp_path, cluster) as scheduler:
        workers = await scheduler.launch(MockBackend(), WorkerConfig(), MOCKS)
        await scheduler.wait_ready(timeout=60)
        pids = scheduler.pids
        assert all(alive(pid) for pid in pids) and len(workers) == 2
    assert not any(alive(pid) for pid in pids)
    assert not ray.is_initialized()
    ray.init(address=cluster, log_to_driver=False)
    try:
        assert ray.cluster_resources()["CPU"] == 2
    finally:
        ray.shutdown()


async def test_a_dead_actor_fails_the_wait_and_takes_its_server(
    tmp_path: Path, connected: str
) -> None:
    async with RayScheduler(tmp_path, connected) as scheduler:
        await scheduler.launch(MockBackend(ready_path="/never"), WorkerConfig(), Allocation("mock"))
        (pid,) = scheduler.pids
        os.kill(parent_of(pid), signal.SIGKILL)  # the actor's process
        with pytest.raises(WorkerFailedError, match="lost its Ray actor"):
            await scheduler.wait_ready(timeout=60)
        await eventually(lambda: not alive(pid), timeout=10, why=lambda: described(pid))
    assert live_groups() == []


async def test_a_run_dir_the_node_cannot_write_logs_to_its_temp_dir(
    tmp_path: Path, connected: str
) -> None:
    (tmp_path / "file").touch()
    run_dir = tmp_path / "file" / tmp_path.name  # under a file: no directory can be made there
    fallback = Path(tempfile.gettempdir(), "agent-eval", tmp_path.name, "workers", "worker-0.log")
    try:
        async with RayScheduler(run_dir, connected) as scheduler:
            config = WorkerConfig(extra_args=["--no-such-flag"])
            (worker,) = await scheduler.launch(MockBackend(), config, Allocation("mock"))
            assert worker.log == fallback
            with pytest.raises(WorkerFailedError, match="unrecognized arguments: --no-such-flag"):
                await scheduler.wait_ready(timeout=60)
    finally:
        shutil.rmtree(fallback.parent.parent, ignore_errors=True)


async def test_unreachable_address_fails_fast(tmp_path: Path) -> None:
    address = f"127.0.0.1:{free_port('127.0.0.1')}"
    with pytest.raises(SchedulerUnavailableError, match=f"nothing answers at {address}"):
        await RayScheduler(tmp_path, address).launch(
            MockBackend(), WorkerConfig(), Allocation("mock")
        )
    assert not ray.is_initialized()


HARNESS = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from agent_eval.allocation import Allocation
    from agent_eval.backends import WorkerConfig
    from agent_eval.system.lifecycle import forever, run_until_signalled
    from agent_eval.schedulers.ray_cluster import RayScheduler
    from agent_eval.testing.mock_backend import MockBackend

    async def main():
        async with RayScheduler(Path(sys.argv[1]), sys.argv[2]) as scheduler:
            await scheduler.launch(MockBackend(), WorkerConfig(), Allocation("mock", dp=2))
            await scheduler.wait_ready(timeout=60)
            print(*scheduler.pids, flush=True)
            await forever()

    run_until_signalled(main())
    """
)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
async def test_no_orphans_whatever_stops_the_harness(
    tmp_path: Path, connected: str, signum: signal.Signals
) -> None:
    harness = await asyncio.create_subprocess_exec(
        sys.executable, "-c", HARNESS, str(tmp_path), connected, stdout=subprocess.PIPE
    )
    pids = [int(p) for p in (await asyncio.wait_for(harness.stdout.readline(), 90)).split()]
    assert len(pids) == 2 and all(alive(pid) for pid in pids)
    harness.send_signal(signum)
    code = await asyncio.wait_for(harness.wait(), 30)
    assert code == (-signal.SIGKILL if signum == signal.SIGKILL else 0)
    # After SIGKILL, Ray ends the dead driver's actors and each server dies with its actor.
    await eventually(lambda: not any(alive(pid) for pid in pids), timeout=30)
    await eventually(lambda: live_groups() == [], timeout=30)


async def test_a_worker_that_would_span_nodes_is_refused_with_the_ways_to_run_it(
    tmp_path: Path, cluster: str
) -> None:
    scheduler = RayScheduler(tmp_path, cluster)
    with pytest.raises(
        GPUAllocationError,
        match=r"mock:d1t4p1 puts 4 GPUs \(t x p\) in each worker, but Ray's nodes have 2, 2, 0 "
        r"GPUs each: a worker would span nodes, which the Ray scheduler does not launch. Run "
        r"it with the Slurm scheduler \(scheduler.type=slurm\), or lower t x p to 2 or less",
    ):
        await scheduler.launch(GPUMockBackend(), WorkerConfig(), Allocation("mock", tp=4))
    assert not ray.is_initialized()


def test_only_a_worker_bigger_than_every_node_but_not_the_cluster_spans_nodes() -> None:
    nodes = [{"GPU": 8.0}, {"GPU": 4.0}]
    for fits_or_short in (Allocation("mock", tp=8), Allocation("mock", tp=8, pp=2)):
        refuse_spanning({"GPU": float(fits_or_short.gpus_per_worker)}, fits_or_short, nodes)
    with pytest.raises(GPUAllocationError, match=r"nodes have 8, 4 GPUs each.* to 8 or less"):
        refuse_spanning({"GPU": 12.0}, Allocation("mock", tp=4, pp=3), nodes)


def test_placement_problem_names_the_short_resource() -> None:
    nodes = [{"CPU": 8.0, "GPU": 4.0}, {"CPU": 8.0, "GPU": 4.0}]
    assert placement_problem({"GPU": 4.0, "CPU": 1.0}, 2, nodes) is None
    assert placement_problem({"GPU": 4.0, "CPU": 1.0}, 3, nodes) == "the cluster has GPU: 8"
    assert placement_problem({"GPU": 8.0}, 1, nodes) == "no node has more than GPU: 4"
    assert placement_problem({"CPU": 1.0}, 1, []) == "the cluster has CPU: 0"
    assert format_bundle({"GPU": 4.0, "CPU": 0.5}) == "{GPU: 4, CPU: 0.5}"
