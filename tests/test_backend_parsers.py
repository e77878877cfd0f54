"""Parser names per backend: its own name passes, an equivalent is translated, else refused."""

from __future__ import annotations

import pytest

from agent_eval.allocation import Allocation
from agent_eval.backends import WorkerConfig, get_backend
from agent_eval.backends.parsers import FORMATS, SGLANG_PARSERS, VLLM_PARSERS
from agent_eval.errors import ConfigError


def flag(backend: str, config: WorkerConfig, name: str) -> str | None:
    """The value of `name` in the worker command of `backend`, None when absent."""
    argv = get_backend(backend).command(config, Allocation.parse(f"{backend}:d1"), "h", 1).argv
    return argv[argv.index(name) + 1] if name in argv else None


@pytest.mark.parametrize(
    ("backend", "given", "expected"),
    [
        ("vllm", "qwen25", "hermes"),
        ("vllm", "qwen", "hermes"),
        ("vllm", "llama3", "llama3_json"),
        ("vllm", "hermes", "hermes"),
        ("vllm", "llama3_json", "llama3_json"),
        ("sglang", "qwen25", "qwen25"),
        ("sglang", "hermes", "hermes"),  # SGLang has a hermes parser of its own
        ("sglang", "qwen3_json", "qwen25"),
        ("sglang", "llama3_json", "llama3"),
        ("sglang", "deepseek_v31", "deepseekv31"),
    ],
)
def test_tool_call_parser_is_named_as_the_backend_names_it(
    backend: str, given: str, expected: str
) -> None:
    config = WorkerConfig(model="m", tool_call_parser=given)
    assert flag(backend, config, "--tool-call-parser") == expected


@pytest.mark.parametrize(
    ("backend", "given", "expected"),
    [
        ("vllm", "deepseek-r1", "deepseek_r1"),
        ("vllm", "deepseek_r1", "deepseek_r1"),
        ("vllm", "qwen3", "qwen3"),
        ("sglang", "deepseek-r1", "deepseek-r1"),
        ("sglang", "deepseek_r1", "deepseek-r1"),
        ("sglang", "openai_gptoss", "gpt-oss"),
    ],
)
def test_reasoning_parser_is_named_as_the_backend_names_it(
    backend: str, given: str, expected: str
) -> None:
    config = WorkerConfig(model="m", reasoning_parser=given)
    assert flag(backend, config, "--reasoning-parser") == expected


@pytest.mark.parametrize("backend", ["sglang", "vllm"])
def test_no_parser_means_no_flag(backend: str) -> None:
    config = WorkerConfig(model="m")
    assert flag(backend, config, "--tool-call-parser") is None
    assert flag(backend, config, "--reasoning-parser") is None


@pytest.mark.parametrize(
    ("backend", "field", "name", "listed"),
    [
        ("vllm", "tool_call_parser", "qwen2", "llama3_json"),
        ("vllm", "reasoning_parser", "auto", "deepseek_r1"),
        ("vllm", "tool_call_parser", "interns1", "internlm"),  # no known equivalent
        ("sglang", "tool_call_parser", "granite", "qwen25"),
        ("sglang", "reasoning_parser", "deepseek_r2", "deepseek-r1"),
    ],
)
def test_unknown_parser_is_refused_before_anything_starts(
    backend: str, field: str, name: str, listed: str
) -> None:
    config = WorkerConfig.model_validate({"model": "m", field: name})
    with pytest.raises(ConfigError) as error:
        get_backend(backend).validate(config, Allocation.parse(f"{backend}:d1"))
    message = str(error.value)
    assert f"rollout.worker.{field}={name!r}" in message
    assert f"not a parser {backend}" in message
    assert listed in message.split("use one of ")[1]


def test_vllm_parser_plugin_may_register_any_name() -> None:
    config = WorkerConfig(
        model="m", tool_call_parser="mine", extra_args=["--tool-parser-plugin", "/p/mine.py"]
    )
    get_backend("vllm").validate(config, Allocation.parse("vllm:d1"))
    assert flag("vllm", config, "--tool-call-parser") == "mine"


def test_every_equivalent_is_a_name_its_server_accepts() -> None:
    servers = {"sglang": SGLANG_PARSERS, "vllm": VLLM_PARSERS}
    for kind, formats in FORMATS.items():
        for fmt in formats:
            for server, name in fmt.names.items():
                assert name in servers[server].names[kind], (kind, server, name)
