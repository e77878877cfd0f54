"""One local Ray cluster of several nodes for every Ray test of a session (they all run on one
xdist worker, one after another): starting one takes seconds of CPU, so it is started once, at
the first test that asks, and stopped once the Ray tests are over (conftest's teardown hook).

A head without CPUs (a driver's node) and two nodes of one CPU and two GPUs each (GPUs only
as Ray counts them: mock workers that ask for GPUs can be placed, or refused for spanning).
"""

from __future__ import annotations

import os

import ray
from ray._private.node import Node
from ray.cluster_utils import Cluster

from agent_eval.testing.ports import free_port

NODES = 2  # each of one CPU and two GPUs


class SharedCluster:
    """The session's cluster, started on first use; `stop()` ends it, the next use starts one."""

    def __init__(self) -> None:
        self._nodes: Cluster | None = None
        self._auth_mode: str | None = None

    def up(self) -> Cluster:
        """The running cluster, started now if it is not, with a node in place of each lost."""
        if self._nodes is None:
            # A process that ran a token-auth cluster cannot own actors on one without (Ray
            # 2.60), and joining a token-auth cluster by address needs RAY_AUTH_MODE=token
            # before ray is imported: the cluster, and every process that joins it, without.
            self._auth_mode = os.environ.get("RAY_AUTH_MODE")
            os.environ["RAY_AUTH_MODE"] = "disabled"
            head = {"gcs_server_port": free_port("127.0.0.1"), "num_cpus": 0}
            self._nodes = Cluster(initialize_head=True, head_node_args=head)
        missing = NODES - len(self._nodes.worker_nodes)
        for _ in range(missing):
            self._nodes.add_node(num_cpus=1, num_gpus=2)
        if missing:
            self._nodes.wait_for_nodes()
        return self._nodes

    def lose(self, node: Node) -> None:
        """`node` killed at once, as a lost machine is; the next `up()` puts one in its place."""
        assert self._nodes is not None
        self._nodes.remove_node(node, allow_graceful=False)

    def stop(self) -> None:
        """End the cluster (a driver connected to it is disconnected first)."""
        if self._nodes is None:
            return
        nodes, self._nodes = self._nodes, None
        try:
            if ray.is_initialized():
                ray.shutdown()
            nodes.shutdown()
        finally:
            if self._auth_mode is None:
                os.environ.pop("RAY_AUTH_MODE", None)
            else:
                os.environ["RAY_AUTH_MODE"] = self._auth_mode


SHARED = SharedCluster()
