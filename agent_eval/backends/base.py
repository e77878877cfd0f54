"""How to start one inference worker: the contract every backend fills in."""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_eval.allocation import Allocation
from agent_eval.backends.parsers import ServerParsers
from agent_eval.errors import ConfigError
from agent_eval.system.credentials import WORKER_API_KEY
from agent_eval.wire import TokenFields


class WorkerConfig(BaseModel):
    """What the user says about the model and how its server is started."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(None, description="Model path or hub id (llamacpp: a GGUF file).")
    served_model_name: str | None = Field(None, description="Name clients use in 'model'.")
    context_length: int | None = Field(None, ge=1, description="Longest context, in tokens.")
    tool_call_parser: str | None = Field(
        None,
        description="Tool-call parser: the server's name (sglang qwen25, vllm hermes) "
        "or a neutral one (qwen25, llama3), translated per backend.",
    )
    reasoning_parser: str | None = Field(
        None,
        description="Reasoning parser: the server's name (sglang deepseek-r1, vllm deepseek_r1) "
        "or a neutral one (deepseek-r1), translated per backend.",
    )
    mem_fraction: float | None = Field(None, gt=0, le=1, description="GPU memory fraction to use.")
    seed: int | None = Field(None, description="Random seed of the server.")
    extra_args: list[str] = Field(
        default_factory=list, description="More server arguments, verbatim."
    )
    python: str | None = Field(None, description="Interpreter of the server's environment.")
    prefix: list[str] = Field(
        default_factory=list, description="Command prefix, e.g. conda run -n sg."
    )
    container: str | None = Field(
        None, description="Apptainer/Singularity image to run the server in."
    )
    container_runtime: Literal["apptainer", "singularity"] = Field(
        "apptainer", description="The program that runs the container image."
    )
    threads: int | None = Field(
        None, ge=1, description="CPU threads per worker, for prompts and answers alike (llamacpp)."
    )
    reproducible: bool = Field(
        False,
        description="llamacpp: one thread (unless threads says otherwise), and every chat "
        "prompt read whole, never finished from an earlier request's cache "
        "(rollout.reproducible sets it).",
    )
    chat_format: str = Field(
        "chatml-tools", description="llama.cpp chat format (chatml-tools: OpenAI tool calls)."
    )
    startup_timeout: float = Field(1800.0, gt=0, description="Seconds a worker may take to start.")
    base_port: int | None = Field(
        None, ge=1, le=65535, description="Local scheduler: worker i listens on base_port + i."
    )
    health_path: str = Field(
        "/health", pattern=r"^/", description="Path the proxy probes on external workers."
    )


@dataclass(frozen=True)
class WorkerCommand:
    """Everything needed to start one worker process and know when it is ready."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    ready_path: str = "/health"
    health_path: str = "/health"
    """What the proxy probes once the worker runs."""


class Backend:
    """Builds the command line of one worker; never imports the server it starts."""

    name: str
    needs_gpus: bool = True
    launches: bool = True
    requires_model: bool = False
    reloads_weights: bool = False
    """Whether its servers load new weights in place (POST /update_weights_from_disk)."""
    parsers: ServerParsers | None = None
    """The tool-call and reasoning parser names its server accepts (None: it takes none)."""
    token_fields: TokenFields = "vllm"
    """Whose request fields its server takes for token ids and logprobs (`eval.tokens`)."""

    def validate(self, config: WorkerConfig, allocation: Allocation) -> None:
        """Raise ConfigError for settings this backend cannot start with."""
        if self.requires_model and not config.model:
            raise ConfigError(f"the {self.name} backend needs a model: pass --model PATH_OR_HUB_ID")
        self.parser_flags(config)

    def parser_flags(self, config: WorkerConfig) -> dict[str, str | None]:
        """`--tool-call-parser` and `--reasoning-parser` as this backend's server names them."""
        if self.parsers is None:
            return {}
        extra = config.extra_args
        return {
            "--tool-call-parser": self.parsers.resolve(
                "tool_call_parser", config.tool_call_parser, extra
            ),
            "--reasoning-parser": self.parsers.resolve(
                "reasoning_parser", config.reasoning_parser, extra
            ),
        }

    def resolved(self, config: WorkerConfig, allocation: Allocation) -> WorkerConfig:
        """`config` with the values this backend picks itself when none is given."""
        return config

    def command(
        self, config: WorkerConfig, allocation: Allocation, host: str, port: int | str
    ) -> WorkerCommand:
        """The command of one worker on host:port (either may be a shell variable)."""
        raise NotImplementedError

    def multinode_args(
        self, nodes: int, node_rank: int | str, dist_host: str, dist_port: int | str
    ) -> list[str]:
        """Arguments that make one node rank of a worker spanning `nodes` nodes."""
        raise ConfigError(
            f"the {self.name} backend cannot span nodes: choose t x p within one node's GPUs"
        )

    def require_key(self, command: WorkerCommand, key: str) -> WorkerCommand:
        """`command` with its server answering only clients that send `key` as a bearer token."""
        raise ConfigError(
            f"{self.name} workers cannot require a key: unset proxy.worker_api_key "
            f"(and {WORKER_API_KEY}) or use a backend that takes one"
        )

    def served_name(self, config: WorkerConfig) -> str | None:
        """The name workers serve the model under, as far as the settings tell (None: unknown).

        SGLang and vLLM serve under the model path when no served name is given.
        """
        return config.served_model_name or config.model


def launcher(config: WorkerConfig, program: list[str], gpus: bool) -> list[str]:
    """Wrap a server's program in the configured interpreter, container and prefix."""
    if program[0] == "python":
        # Inside a container or another environment, this process's interpreter means nothing.
        elsewhere = config.container or config.prefix
        program = [config.python or ("python3" if elsewhere else sys.executable), *program[1:]]
    if config.container:
        nv = ["--nv"] if gpus else []
        program = [config.container_runtime, "exec", *nv, config.container, *program]
    return [*config.prefix, *program]


def with_env(command: WorkerCommand, name: str, value: str) -> WorkerCommand:
    """`command` with one more environment variable."""
    return dataclasses.replace(command, env={**command.env, name: value})


def key_argument(command: WorkerCommand, flag: str, key: str) -> WorkerCommand:
    """`command` given `flag KEY` by a shell that expands it from the environment.

    For servers that read a key from their arguments only: so it is in no command line,
    script or log line the harness writes (the server's own arguments still show it).
    """
    expand = f'exec "$@" {flag} "${WORKER_API_KEY}"'
    keyed = dataclasses.replace(command, argv=["sh", "-c", expand, "sh", *command.argv])
    return with_env(keyed, WORKER_API_KEY, key)


def optional_flags(pairs: dict[str, object]) -> list[str]:
    """`--flag value` for each value that is set."""
    return [
        item for flag, value in pairs.items() if value is not None for item in (flag, str(value))
    ]
