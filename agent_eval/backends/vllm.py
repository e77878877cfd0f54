"""vLLM: `vllm serve MODEL`, with the same shape as SGLang."""

from __future__ import annotations

from agent_eval.allocation import Allocation
from agent_eval.backends.base import (
    Backend,
    WorkerCommand,
    WorkerConfig,
    launcher,
    optional_flags,
    with_env,
)
from agent_eval.backends.parsers import VLLM_PARSERS


class VLLM(Backend):
    name = "vllm"
    requires_model = True
    parsers = VLLM_PARSERS

    def command(
        self, config: WorkerConfig, allocation: Allocation, host: str, port: int | str
    ) -> WorkerCommand:
        program = [
            "python", "-m", "vllm.entrypoints.cli.main", "serve", str(config.model),
            "--tensor-parallel-size", str(allocation.tp),
            "--pipeline-parallel-size", str(allocation.pp),
            "--host", host,
            "--port", str(port),
        ]  # fmt: skip
        if config.tool_call_parser:
            program.append("--enable-auto-tool-choice")
        program += optional_flags(
            {
                "--served-model-name": config.served_model_name,
                **self.parser_flags(config),
                "--max-model-len": config.context_length,
                "--gpu-memory-utilization": config.mem_fraction,
                "--seed": config.seed,
            }
        )
        argv = launcher(config, [*program, *config.extra_args], gpus=True)
        return WorkerCommand(argv, ready_path="/health", health_path="/health")

    def multinode_args(
        self, nodes: int, node_rank: int | str, dist_host: str, dist_port: int | str
    ) -> list[str]:
        """vLLM's multiprocessing multi-node mode; ranks other than 0 run no API server."""
        args = [
            "--nnodes", str(nodes),
            "--node-rank", str(node_rank),
            "--master-addr", dist_host,
            "--master-port", str(dist_port),
        ]  # fmt: skip
        return args if str(node_rank) == "0" else [*args, "--headless"]

    def require_key(self, command: WorkerCommand, key: str) -> WorkerCommand:
        """vLLM reads VLLM_API_KEY when no --api-key is given; /health stays open."""
        return with_env(command, "VLLM_API_KEY", key)
