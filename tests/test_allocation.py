"""Allocation strings, backend command lines and dotted overrides."""

from __future__ import annotations

import pytest

from agent_eval.allocation import Allocation, AllocationError
from agent_eval.backends import WorkerConfig, get_backend
from agent_eval.errors import ConfigError
from agent_eval.launch.config import LaunchConfig
from agent_eval.settings import apply_overrides


@pytest.mark.parametrize(
    ("text", "expected", "gpus", "world"),
    [
        ("sglang:d4p1t1", Allocation("sglang", 4, 1, 1), 1, 4),
        ("sglang:d2t4", Allocation("sglang", 2, 4, 1), 4, 8),
        ("vllm:d2t2", Allocation("vllm", 2, 2, 1), 2, 4),
        ("llamacpp:d2", Allocation("llamacpp", 2, 1, 1), 1, 2),
        ("sglang:p2t2d3", Allocation("sglang", 3, 2, 2), 4, 12),
        ("external", Allocation("external"), 1, 1),
    ],
)
def test_allocation_strings(text: str, expected: Allocation, gpus: int, world: int) -> None:
    allocation = Allocation.parse(text)
    assert allocation == expected
    assert (allocation.gpus_per_worker, allocation.world_size) == (gpus, world)


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("sglang.d4", "use ':' between the backend and the sizes"),
        ("sglang:d0", "sizes start at 1"),
        ("sglang:x2", "unknown size 'x'; sizes are d (data-parallel workers), t"),
        ("sglang:d2d3", "'d' is given twice"),
        ("sglang:d2 t1", "write sizes as a letter and a count"),
        ("sglang:4", "write sizes as a letter and a count"),
    ],
)
def test_bad_allocation_strings_get_a_hint(text: str, hint: str) -> None:
    with pytest.raises(AllocationError, match=r"^allocation") as error:
        Allocation.parse(text)
    assert hint in str(error.value)


def test_unknown_backend_suggests_the_nearest() -> None:
    with pytest.raises(ConfigError, match="did you mean 'sglang'"):
        get_backend("sglnag")


# Flags of `python -m sglang.launch_server` as SGLang documents them
# (docs/advanced_features/server_arguments.md).
SGLANG_DOCUMENTED = {
    "--model-path", "--tp-size", "--pp-size", "--host", "--port", "--served-model-name",
    "--tool-call-parser", "--reasoning-parser", "--context-length", "--mem-fraction-static",
    "--random-seed",
}  # fmt: skip


def test_sglang_command_uses_documented_flags() -> None:
    config = WorkerConfig(
        model="/ckpt/step-500", served_model_name="policy", tool_call_parser="qwen25",
        reasoning_parser="deepseek-r1", context_length=32768, mem_fraction=0.8, seed=7,
        extra_args=["--enable-metrics"], python="/envs/sglang/bin/python",
    )  # fmt: skip
    command = get_backend("sglang").command(
        config, Allocation.parse("sglang:d2t4p2"), "10.0.0.5", 30000
    )
    argv = command.argv
    assert argv[:3] == ["/envs/sglang/bin/python", "-m", "sglang.launch_server"]
    flags = {a for a in argv if a.startswith("--")} - {"--enable-metrics"}
    assert flags <= SGLANG_DOCUMENTED, flags - SGLANG_DOCUMENTED
    pairs = dict(zip(argv[3::2], argv[4::2], strict=False))
    assert pairs["--model-path"] == "/ckpt/step-500"
    assert (pairs["--tp-size"], pairs["--pp-size"], pairs["--port"]) == ("4", "2", "30000")
    assert argv[-1] == "--enable-metrics"
    assert command.ready_path == "/health"


def test_sglang_argument_parser_accepts_the_command() -> None:
    server_args = pytest.importorskip(
        "sglang.srt.server_args", reason="sglang is not installed here (it needs CUDA)"
    )
    config = WorkerConfig(model="m", tool_call_parser="qwen25", seed=1)
    argv = (
        get_backend("sglang").command(config, Allocation.parse("sglang:d1t2"), "127.0.0.1", 1).argv
    )
    import argparse

    parser = argparse.ArgumentParser()
    server_args.ServerArgs.add_cli_args(parser)
    parsed = parser.parse_args(argv[3:])
    assert (parsed.model_path, parsed.tp_size) == ("m", 2)


def test_container_and_prefix_wrap_the_command() -> None:
    config = WorkerConfig(model="m", container="/images/sglang.sif", prefix=["nice", "-n", "5"])
    argv = get_backend("sglang").command(config, Allocation.parse("sglang:d1"), "h", 1).argv
    assert argv[:7] == ["nice", "-n", "5", "apptainer", "exec", "--nv", "/images/sglang.sif"]
    assert argv[7:10] == ["python3", "-m", "sglang.launch_server"]


def test_vllm_command() -> None:
    config = WorkerConfig(model="m", tool_call_parser="hermes", context_length=4096)
    argv = get_backend("vllm").command(config, Allocation.parse("vllm:d2t2"), "h", 8000).argv
    assert argv[1:5] == ["-m", "vllm.entrypoints.cli.main", "serve", "m"]
    assert "--enable-auto-tool-choice" in argv
    assert argv[argv.index("--tensor-parallel-size") + 1] == "2"
    assert argv[argv.index("--max-model-len") + 1] == "4096"


@pytest.mark.parametrize("name", ["sglang", "vllm"])
def test_gpu_backends_need_a_model(name: str) -> None:
    with pytest.raises(ConfigError, match="needs a model: pass --model"):
        get_backend(name).validate(WorkerConfig(), Allocation.parse(f"{name}:d1"))


def test_overrides_set_nested_keys_with_yaml_values() -> None:
    data = apply_overrides(
        LaunchConfig,
        {"rollout": {"backend": "sglang:d2"}},
        [
            "rollout.worker.seed=3",
            "rollout.worker.extra_args=[--a, --b]",
            "scheduler.slurm.partition=gpu",
            "scheduler.type=slurm",
        ],
    )
    config = LaunchConfig.model_validate(data)
    worker, scheduler = config.rollout.worker, config.scheduler
    assert (worker.seed, worker.extra_args) == (3, ["--a", "--b"])
    assert (scheduler.slurm.partition, scheduler.type) == ("gpu", "slurm")


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("rollout.worker.sead=3", "did you mean 'rollout.worker.seed'"),
        ("scheduler.slurm.partion=gpu", "did you mean 'scheduler.slurm.partition'"),
        ("rollout.wroker.seed=1", "did you mean 'rollout.worker'"),
        ("rollout.worker.seed", "is not key=value"),
    ],
)
def test_unknown_override_names_the_nearest_key(override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        apply_overrides(LaunchConfig, {}, [override])
