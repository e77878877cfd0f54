"""The engine's shards as actors on a real local Ray cluster of several nodes: the records of an
in-process run, a resume, `agent-eval ctl` acting on every shard, and a node lost mid-run with
every attempt played exactly once.

The session's cluster (helpers/ray_cluster.py): a head without CPUs (the driver's node) and two
one-CPU nodes, so that each of the two shards runs on a node of its own. A node removed by a
test is replaced before the next test.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray
from pydantic import SecretStr
from ray.cluster_utils import Cluster

from agent_eval.errors import ConfigError
from agent_eval.run.config import load_run_config
from agent_eval.run.evaluation import evaluate, plan
from agent_eval.run.shards import shard_of
from agent_eval.run.shards.ray_shard import EngineShardActor, RayShardJob
from agent_eval.testing.mock_worker import MockWorker
from agent_eval.testing.ports import free_port
from tests.helpers.cli_runs import ROWS, agent_eval, finish, lines, summary, write_dataset
from tests.helpers.control_runs import NO_REPLAYS, Run, results
from tests.helpers.observer import QuietObserver
from tests.helpers.proxy import StartWorkers
from tests.helpers.ray_cluster import SHARED
from tests.helpers.waits import eventually

DRIVER = "agent_eval.run.shards.ray_driver"
ON_RAY = ("eval.engine=ray", "eval.processes=2")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """The session's cluster (helpers/ray_cluster.py), this process connected to it as the
    engine's driver for the module."""
    nodes = SHARED.up()
    ray.init(address=nodes.address, log_to_driver=False)
    try:
        yield nodes
    finally:
        ray.shutdown()


async def run_here(workers: list[MockWorker], run_dir: Path, *overrides: str) -> Path:
    """Two attempts of each "Say i" sample against `workers`, in-process; the run directory."""
    data = write_dataset(run_dir.parent / "say.jsonl")
    given = [
        f"rollout.endpoints={[w.url for w in workers]}",
        f"dataset.name={data}",
        f"output.dir={run_dir}",
        "eval.n_samples=2",
        *overrides,
    ]
    await evaluate(plan(load_run_config(None, {}, given)), QuietObserver())
    return run_dir


def scores(run_dir: Path) -> dict[tuple[str, int], tuple[float, bool]]:
    """Each attempt's reward and verdict; every attempt is there once."""
    records = lines(run_dir)
    found = {(r["sample_id"], r["attempt"]): (r["reward"], r["correct"]) for r in records}
    assert len(found) == len(records) == ROWS * 2
    return found


def on_cluster(cluster: Cluster) -> tuple[str, ...]:
    """`run` arguments that play the shards on the module's cluster, from another process."""
    return (*ON_RAY, f"scheduler.ray.address={cluster.address}")


def shard_nodes(log: str) -> dict[int, str]:
    """Each shard's node id, as the driver logged it."""
    found = re.findall(r"engine shard (\d+) runs on node \S+ \((\w+)\)", log)
    return {int(index): node for index, node in found}


def delivered_by_shard_0(run_dir: Path) -> int:
    """Records of shard 0's samples written so far."""
    samples = run_dir / "samples.jsonl"
    if not samples.exists():
        return 0
    return sum(shard_of(record["sample_id"], 2) == 0 for record in lines(run_dir))


async def slow_workers(start_workers: StartWorkers) -> list[MockWorker]:
    """Two mock workers slow enough (0.2 s a call) for a test to step in mid-run."""
    workers = await start_workers(2)
    for worker in workers:
        worker.behavior.latency = 0.2
    return workers


async def test_shards_on_two_nodes_resume_an_interrupted_run_to_the_records_of_one_process(
    cluster: Cluster, start_workers: StartWorkers, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, DRIVER)
    workers = await start_workers(2)
    one = await run_here(workers, tmp_path / "one")
    for worker in workers:  # slow enough (0.2 s a call) to interrupt the run on Ray mid-way
        worker.behavior.latency = 0.2
    # Every attempt keyed, on a proxy of two processes: each key's calls go to its origin.
    on_ray = (*ON_RAY, "eval.capture=true", "proxy.processes=2")
    run_dir = tmp_path / "ray"
    first = asyncio.ensure_future(run_here(workers, run_dir, *on_ray, "eval.concurrency=1"))
    samples = run_dir / "samples.jsonl"
    await eventually(lambda: samples.exists() and len(samples.read_bytes().splitlines()) >= 3, 90)
    first.cancel()  # as Ctrl-C does
    with contextlib.suppress(asyncio.CancelledError):
        await first
    kept = samples.read_bytes()
    assert 3 <= len(kept.splitlines()) < ROWS * 2
    # The shards' actors are gone: their nodes' CPUs are free again.
    await eventually(lambda: ray.available_resources().get("CPU") == 2, 30)
    caplog.clear()
    for worker in workers:
        worker.behavior.latency = 0
    await run_here(workers, run_dir, *on_ray)
    # The resume played only what was missing, to the records of one process.
    assert samples.read_bytes().startswith(kept)
    assert scores(run_dir) == scores(one)
    assert summary(run_dir)["quality"] == summary(one)["quality"]
    assert all(record["model_calls"] > 0 for record in lines(run_dir))  # the proxy's records
    nodes = shard_nodes(caplog.text)
    assert len(nodes) == 2 and len(set(nodes.values())) == 2
    assert {shard_of(sample_id, 2) for sample_id, _ in scores(run_dir)} == {0, 1}


async def test_a_shard_that_cannot_reach_the_proxy_names_its_node_and_the_url(
    cluster: Cluster, tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{free_port('127.0.0.1')}/v1"  # nothing listens there
    config = load_run_config(None, {}, [f"output.dir={tmp_path}"])
    job = RayShardJob(
        config=config, base_url=url, model="m", api_key=SecretStr("k"), admin_token=None
    )
    shard = EngineShardActor.remote(job)
    try:
        with pytest.raises(ConfigError) as error:
            await shard.start.remote()
    finally:
        ray.kill(shard)
    message = str(error.value.cause)
    assert re.search(
        rf"the engine shard on node \S+ cannot reach the proxy at {re.escape(url)} ", message
    )
    assert "proxy.host=0.0.0.0 (with proxy.api_key)" in message


async def test_ctl_pauses_requeues_and_resumes_the_shards_on_ray(
    cluster: Cluster, start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = await start_workers(1)
    worker.behavior.two_step = True  # each answer follows from its prompt alone: runs compare
    run = Run(worker, tmp_path, "ray", *on_cluster(cluster), *NO_REPLAYS)
    # The same run left alone, in this process (`run`'s options as settings): the reference.
    alone = await run_here([worker], tmp_path / "alone", "eval.concurrency=2", "eval.seed=7")
    worker.behavior.hang = True
    process = await run.start()
    # Two attempts on each shard hold their first call; paused, their second calls are
    # refused and neither shard starts another.
    await run.pause_holding(4, 90)
    worker.behavior.error_status, worker.behavior.error_count = 422, 4
    await run.let_finish(4)
    errored = {(r["sample_id"], r["attempt"]) for r in lines(run.dir)}
    assert {shard_of(sample_id, 2) for sample_id, _ in errored} == {0, 1}

    code, out, err = await run.ctl("requeue", "--errors")
    assert code == 0 and out.startswith("playing 4 errored attempts again"), (out, err)
    code, out, err = await run.ctl("concurrency", "3")
    assert code == 0 and "paused · 0 in flight · at most 3" in out, (out, err)
    assert (await run.ctl("resume"))[0] == 0
    code, _, err = await finish(process, 180)
    assert code == 0, err
    # Each errored attempt played again once: the records of a run left alone.
    assert results(run.dir) == results(alone)
    aside = [json.loads(line) for line in (run.dir / "unscored.jsonl").read_text().splitlines()]
    assert {(r["sample_id"], r["attempt"]) for r in aside} == errored


async def test_ctl_cancel_stops_the_shards_on_ray_and_resume_plays_every_attempt_once(
    cluster: Cluster, start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = await start_workers(1)
    run = Run(worker, tmp_path, "ray", *on_cluster(cluster))
    worker.behavior.hang = True
    process = await run.start()
    await worker.gate.wait_for_arrivals(4, 90)
    code, out, err = await run.ctl("cancel")
    assert code == 0 and "cancelled" in out, err
    code, _, err = await finish(process, 120)
    assert code == 130, err
    said = " ".join(err.split())
    assert f"cancelled by agent-eval ctl: 0 finished attempts are kept in {run.dir}" in said
    assert f"agent-eval run --resume {run.dir}" in said
    assert summary(run.dir)["complete"] is False
    await worker.gate.wait_until_empty()  # the shards' attempts in flight ended

    worker.behavior.hang = False
    resume = await agent_eval("run", "--resume", str(run.dir), cwd=tmp_path)
    code, _, err = await finish(resume, 180)
    assert code == 0, err
    assert len(scores(run.dir)) == ROWS * 2 and summary(run.dir)["complete"] is True


async def test_a_node_lost_mid_run_leaves_its_attempts_to_the_shard_left(
    cluster: Cluster, start_workers: StartWorkers, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, DRIVER)
    workers = await slow_workers(start_workers)
    run_dir = tmp_path / "run"
    playing = asyncio.ensure_future(run_here(workers, run_dir, *ON_RAY, "eval.concurrency=1"))
    await eventually(lambda: delivered_by_shard_0(run_dir) >= 2, 90)
    lost = shard_nodes(caplog.text)[0]
    node = next(node for node in cluster.worker_nodes if node.node_id == lost)
    await asyncio.to_thread(SHARED.lose, node)
    await asyncio.wait_for(playing, 120)
    left = re.findall(r"engine shard 0 was lost .*; the 1 left play its (\d+)", caplog.text)
    # Lost mid-run: some of its attempts delivered, some owed; only those are played again.
    played = scores(run_dir)  # each attempt once: none lost, none doubled
    owned = sum(shard_of(sample_id, 2) == 0 for sample_id, _ in played)
    assert len(left) == 1 and 0 < int(left[0]) <= owned - 2
    assert summary(run_dir)["complete"] is True
