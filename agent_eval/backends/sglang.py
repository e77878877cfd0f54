"""SGLang: `python -m sglang.launch_server`, usually from its own environment or container."""

from __future__ import annotations

from agent_eval.allocation import Allocation
from agent_eval.backends.base import (
    Backend,
    WorkerCommand,
    WorkerConfig,
    key_argument,
    launcher,
    optional_flags,
)
from agent_eval.backends.parsers import SGLANG_PARSERS


class SGLang(Backend):
    name = "sglang"
    requires_model = True
    reloads_weights = True
    parsers = SGLANG_PARSERS
    token_fields = "sglang"

    def command(
        self, config: WorkerConfig, allocation: Allocation, host: str, port: int | str
    ) -> WorkerCommand:
        program = [
            "python", "-m", "sglang.launch_server",
            "--model-path", str(config.model),
            "--tp-size", str(allocation.tp),
            "--pp-size", str(allocation.pp),
            "--host", host,
            "--port", str(port),
        ]  # fmt: skip
        program += optional_flags(
            {
                "--served-model-name": config.served_model_name,
                **self.parser_flags(config),
                "--context-length": config.context_length,
                "--mem-fraction-static": config.mem_fraction,
                "--random-seed": config.seed,
            }
        )
        argv = launcher(config, [*program, *config.extra_args], gpus=True)
        return WorkerCommand(argv, ready_path="/health", health_path="/health")

    def multinode_args(
        self, nodes: int, node_rank: int | str, dist_host: str, dist_port: int | str
    ) -> list[str]:
        """sglang server_args: --nnodes, --node-rank, --dist-init-addr (rank 0's host:port)."""
        return [
            "--nnodes", str(nodes),
            "--node-rank", str(node_rank),
            "--dist-init-addr", f"{dist_host}:{dist_port}",
        ]  # fmt: skip

    def require_key(self, command: WorkerCommand, key: str) -> WorkerCommand:
        """SGLang reads its key only from --api-key."""
        return key_argument(command, "--api-key", key)
