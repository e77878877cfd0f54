"""Finding finished checkpoints: half-written ones wait, finished ones come once, by step."""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from agent_eval.errors import ConfigError
from agent_eval.testing.mock_worker import MockWorker
from agent_eval.trigger.checkpoints import Checkpoint, CheckpointFinder, step_of

SETTLE = 5.0


class FakeClock:
    """A clock the test moves by hand, so settling needs no sleeping."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path.resolve() / "run"
    path.mkdir()
    return path


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def finder(root: Path, clock: FakeClock) -> CheckpointFinder:
    return CheckpointFinder(root, settle_seconds=SETTLE, clock=clock)


def hf_checkpoint(path: Path, shards: int = 0, weights: str = "model.safetensors") -> Path:
    """A finished Hugging Face checkpoint: config.json, then one weight file or indexed shards."""
    path.mkdir(parents=True)
    (path / "config.json").write_text('{"model_type": "llama"}')
    if not shards:
        (path / weights).write_bytes(b"w" * 64)
        return path
    stem, suffix = weights.split(".", 1)
    names = [f"{stem}-{i:05d}-of-{shards:05d}.{suffix}" for i in range(1, shards + 1)]
    for name in names:
        (path / name).write_bytes(b"w" * 64)
    index = {"metadata": {}, "weight_map": {f"layer.{i}": name for i, name in enumerate(names)}}
    (path / f"{weights}.index.json").write_text(json.dumps(index))
    return path


def settle(finder: CheckpointFinder, clock: FakeClock) -> list[Checkpoint]:
    """Poll now and once more after the settle time; everything both polls reported."""
    found = finder.poll()
    clock.now += SETTLE
    return found + finder.poll()


def test_a_finished_checkpoint_is_reported_once_after_settling(
    finder: CheckpointFinder, clock: FakeClock, root: Path
) -> None:
    path = hf_checkpoint(root / "checkpoint-500")
    assert finder.poll() == []  # first sighting: could still be growing
    clock.now = SETTLE - 0.1
    assert finder.poll() == []
    clock.now = SETTLE
    assert finder.poll() == [Checkpoint(path, 500)]
    clock.now += 100
    assert finder.poll() == []


def test_config_without_weights_waits_for_the_weights(
    finder: CheckpointFinder, clock: FakeClock, root: Path
) -> None:
    path = root / "checkpoint-10"
    path.mkdir()
    (path / "config.json").write_text("{}")
    assert settle(finder, clock) == []
    (path / "model.safetensors").write_bytes(b"")
    assert settle(finder, clock) == [], "an empty weight file is not weights"
    (path / "model.safetensors").write_bytes(b"w" * 64)
    assert settle(finder, clock) == [Checkpoint(path, 10)]


def test_an_index_naming_a_missing_shard_waits_for_it(
    finder: CheckpointFinder, clock: FakeClock, root: Path
) -> None:
    path = hf_checkpoint(root / "checkpoint-20", shards=3)
    shard = path / "model-00002-of-00003.safetensors"
    shard.rename(root / "aside")
    assert settle(finder, clock) == []
    (root / "aside").rename(shard)
    assert settle(finder, clock) == [Checkpoint(path, 20)]


def test_a_half_written_index_is_not_an_index(
    finder: CheckpointFinder, clock: FakeClock, root: Path
) -> None:
    path = hf_checkpoint(root / "checkpoint-30", shards=2)
    index = path / "model.safetensors.index.json"
    whole = index.read_text()
    index.write_text(whole[: len(whole) // 2])
    assert settle(finder, clock) == []
    index.write_text(whole)
    assert settle(finder, clock) == [Checkpoint(path, 30)]


@pytest.mark.parametrize(
    "busy",
    [
        "model.safetensors.tmp",
        "optimizer.pt.partial",
        "model.safetensors.incomplete",
        "save.lock",
        ".model.safetensors.Xa31Qz",  # rsync's temporary
    ],
)
def test_a_file_still_being_written_holds_the_checkpoint_back(
    finder: CheckpointFinder, clock: FakeClock, root: Path, busy: str
) -> None:
    path = hf_checkpoint(root / "checkpoint-40")
    (path / busy).write_bytes(b"x")
    assert settle(finder, clock) == []
    (path / busy).unlink()
    assert settle(finder, clock) == [Checkpoint(path, 40)]


@pytest.mark.parametrize(
    "staging",
    [
        "tmp-checkpoint-50",  # HF Trainer 4.36-4.38
        "checkpoint-50.tmp",
        ".checkpoint-50.staging-1a2b",  # NeMo RL
        "checkpoint-50.orbax-checkpoint-tmp-3",  # Orbax
        "checkpoint-50_temp",
    ],
)
def test_a_staging_directory_is_not_picked_up_until_renamed(
    finder: CheckpointFinder, clock: FakeClock, root: Path, staging: str
) -> None:
    hf_checkpoint(root / staging)
    assert settle(finder, clock) == []
    (root / staging).rename(root / "checkpoint-50")
    assert settle(finder, clock) == [Checkpoint(root / "checkpoint-50", 50)]


def test_a_file_still_growing_waits_until_it_stops(
    finder: CheckpointFinder, clock: FakeClock, root: Path
) -> None:
    path = hf_checkpoint(root / "checkpoint-60")
    assert finder.poll() == []
    with (path / "model.safetensors").open("ab") as weights:
        weights.write(b"more")  # a copy in progress
    clock.now = SETTLE
    assert finder.poll() == [], "it changed between the polls"
    clock.now = SETTLE + SETTLE / 2
    assert finder.poll() == [], "unchanged, but not yet for the whole settle time"
    clock.now = 2 * SETTLE
    assert finder.poll() == [Checkpoint(path, 60)]


def test_a_new_file_restarts_the_settle_time(
    finder: CheckpointFinder, clock: FakeClock, root: Path
) -> None:
    path = hf_checkpoint(root / "checkpoint-70")
    assert finder.poll() == []
    (path / "optimizer.pt").write_bytes(b"o")  # HF Trainer saves the optimizer after the model
    clock.now = SETTLE
    assert finder.poll() == []
    clock.now = 2 * SETTLE
    assert finder.poll() == [Checkpoint(path, 70)]


def test_checkpoints_come_oldest_step_first_whatever_their_naming(
    finder: CheckpointFinder, clock: FakeClock, root: Path
) -> None:
    names = {
        "checkpoint-500": 500,
        "global_step300": 300,
        "step_200": 200,
        "step-50": 50,
        "iter_0000700": 700,
        "epoch_3_step_900": 900,
        "epoch1epochstep5globalstep1000": 1000,
    }
    for name in names:
        hf_checkpoint(root / name)
    found = settle(finder, clock)
    assert found == sorted(Checkpoint(root / name, step) for name, step in names.items())
    assert [c.step for c in found] == [50, 200, 300, 500, 700, 900, 1000]
    assert settle(finder, clock) == [], "each checkpoint is reported once"


@pytest.mark.parametrize(
    ("name", "step"),
    [
        ("checkpoint-500", 500),
        ("global_step500", 500),
        ("global_step_500", 500),
        ("step_500", 500),
        ("step-500", 500),
        ("iter_0000500", 500),
        ("epoch_3_step_500", 500),
        ("epoch1epochstep5globalstep500", 500),
        ("ckpt-500-Q4_K_M", 500),
        ("qwen-500-q8_0", 500),
        ("model_500_bf16", 500),
        ("500", 500),
        ("final", None),
        ("model-f16", None),
    ],
)
def test_step_of_reads_the_usual_names(name: str, step: int | None) -> None:
    assert step_of(name) == step


def test_a_latest_symlink_is_not_a_second_checkpoint(
    finder: CheckpointFinder, clock: FakeClock, root: Path, tmp_path: Path
) -> None:
    path = hf_checkpoint(root / "checkpoint-80")
    (root / "latest").symlink_to(path, target_is_directory=True)
    outside = hf_checkpoint(tmp_path / "elsewhere" / "checkpoint-90")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    (root / "linked-again").symlink_to(outside, target_is_directory=True)
    assert settle(finder, clock) == [Checkpoint(path, 80), Checkpoint(outside.resolve(), 90)]


def test_gguf_files_are_checkpoints_and_a_split_one_waits_for_every_part(
    finder: CheckpointFinder, clock: FakeClock, root: Path
) -> None:
    (root / "ckpt-100.gguf").write_bytes(b"GGUF" * 8)
    (root / "ckpt-200-Q4_K_M.gguf").write_bytes(b"GGUF" * 8)
    (root / "ckpt-300-00001-of-00002.gguf").write_bytes(b"GGUF" * 8)
    assert settle(finder, clock) == [
        Checkpoint(root / "ckpt-100.gguf", 100),
        Checkpoint(root / "ckpt-200-Q4_K_M.gguf", 200),
    ]
    (root / "ckpt-300-00002-of-00002.gguf").write_bytes(b"GGUF" * 8)
    assert settle(finder, clock) == [Checkpoint(root / "ckpt-300-00001-of-00002.gguf", 300)]


def test_pytorch_bin_weights_count_too(
    finder: CheckpointFinder, clock: FakeClock, root: Path
) -> None:
    single = hf_checkpoint(root / "checkpoint-1", weights="pytorch_model.bin")
    sharded = hf_checkpoint(root / "checkpoint-2", shards=2, weights="pytorch_model.bin")
    (sharded / "pytorch_model-00001-of-00002.bin").unlink()
    assert settle(finder, clock) == [Checkpoint(single, 1)]
    (sharded / "pytorch_model-00001-of-00002.bin").write_bytes(b"w")
    assert settle(finder, clock) == [Checkpoint(sharded, 2)]


def test_a_name_without_a_step_comes_after_the_largest_step(
    finder: CheckpointFinder, clock: FakeClock, root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    hf_checkpoint(root / "checkpoint-40")
    hf_checkpoint(root / "final")
    with caplog.at_level(logging.WARNING):
        found = settle(finder, clock)
    assert found == [Checkpoint(root / "checkpoint-40", 40), Checkpoint(root / "final", 41)]
    assert "no step in its name" in caplog.text
    hf_checkpoint(root / "best")
    assert settle(finder, clock) == [Checkpoint(root / "best", 42)]


def test_the_root_itself_is_a_checkpoint_next_to_its_children(
    finder: CheckpointFinder, clock: FakeClock, root: Path
) -> None:
    # HF Trainer: checkpoint-N directories, then save_model() writes the final model into root.
    hf_checkpoint(root / "checkpoint-30")
    (root / "config.json").write_text("{}")
    (root / "model.safetensors").write_bytes(b"w" * 64)
    assert settle(finder, clock) == [
        Checkpoint(root / "checkpoint-30", 30),
        Checkpoint(root, 31),  # "run" carries no step keyword: it is the newest
    ]


def test_a_single_checkpoint_directory_can_be_watched(clock: FakeClock, tmp_path: Path) -> None:
    path = hf_checkpoint(tmp_path.resolve() / "checkpoint-700")
    finder = CheckpointFinder(path, settle_seconds=SETTLE, clock=clock)
    assert settle(finder, clock) == [Checkpoint(path, 700)]


def test_verl_weights_are_found_under_actor_huggingface(
    finder: CheckpointFinder, clock: FakeClock, root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    model_dir = hf_checkpoint(root / "global_step_10" / "actor" / "huggingface")
    config_only = root / "global_step_20" / "actor" / "huggingface"
    config_only.mkdir(parents=True)
    (config_only / "config.json").write_text("{}")
    with caplog.at_level(logging.WARNING):
        assert settle(finder, clock) == [Checkpoint(model_dir, 10)]
        clock.now += SETTLE
        assert finder.poll() == []
    assert caplog.text.count("hf_model in checkpoint.save_contents") == 1


def test_a_checkpoint_deleted_before_it_settles_is_forgotten(
    finder: CheckpointFinder, clock: FakeClock, root: Path
) -> None:
    path = hf_checkpoint(root / "checkpoint-5")
    assert finder.poll() == []
    shutil.rmtree(path)  # rotated away by save_total_limit
    clock.now = SETTLE
    assert finder.poll() == []
    hf_checkpoint(path)
    assert settle(finder, clock) == [Checkpoint(path, 5)]


def test_checkpoints_sort_by_step() -> None:
    late, early = Checkpoint(Path("/a/checkpoint-9"), 9), Checkpoint(Path("/z/checkpoint-1"), 1)
    assert sorted([late, early]) == [early, late]
    assert max(late, early) is late


def test_a_missing_or_wrong_root_says_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"does not exist.*output_dir"):
        CheckpointFinder(tmp_path / "nope")
    (tmp_path / "file.gguf").write_bytes(b"GGUF")
    with pytest.raises(ConfigError, match=r"not a directory.*checkpoint-N"):
        CheckpointFinder(tmp_path / "file.gguf")
    with pytest.raises(ConfigError, match="settle_seconds"):
        CheckpointFinder(tmp_path, settle_seconds=-1)


def test_a_root_removed_while_watching_is_an_error(finder: CheckpointFinder, root: Path) -> None:
    root.rmdir()
    with pytest.raises(ConfigError, match="does not exist"):
        finder.poll()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        yield session


async def test_mock_worker_loads_weights_from_disk_like_sglang(
    http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    checkpoint = hf_checkpoint(tmp_path / "checkpoint-100")
    async with MockWorker(model="base") as worker:
        update = {"model_path": str(checkpoint), "load_format": "auto"}
        async with http.post(f"{worker.url}/update_weights_from_disk", json=update) as response:
            assert response.status == 200
            assert await response.json() == {
                "success": True,
                "message": "Succeeded to update model weights.",
                "num_paused_requests": 0,
            }
        async with http.get(f"{worker.url}/get_model_info") as response:
            info = await response.json()
        assert (info["model_path"], info["tokenizer_path"]) == (str(checkpoint), "base")
        async with http.get(f"{worker.url}/get_server_info") as response:
            assert (await response.json())["model_path"] == str(checkpoint)
        assert worker.state.model_path == str(checkpoint)
        assert worker.stats.weight_updates == 1


async def test_mock_worker_refuses_weights_that_are_not_there(
    http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    missing = str(tmp_path / "checkpoint-404")
    async with MockWorker(model="base") as worker:
        url = f"{worker.url}/update_weights_from_disk"
        async with http.post(url, json={"model_path": missing}) as response:
            assert response.status == 400  # SGLang: HTTPStatus.BAD_REQUEST with success false
            body = await response.json()
        assert body["success"] is False
        assert (
            body["message"] == f"Failed to get weights iterator: {missing} (repository not found)."
        )
        async with http.post(url, json={"load_format": "auto"}) as response:
            assert response.status == 400
            assert "model_path" in (await response.json())["message"]
        async with http.get(f"{worker.url}/get_model_info") as response:
            assert (await response.json())["model_path"] == "base"
        assert worker.stats.weight_updates == 2


async def test_mock_worker_with_a_key_wants_it_everywhere_but_health_like_sglang(
    http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    checkpoint = hf_checkpoint(tmp_path / "checkpoint-100")
    update = {"model_path": str(checkpoint)}
    async with MockWorker(model="base", api_key="k1") as worker:
        async with http.post(f"{worker.url}/update_weights_from_disk", json=update) as response:
            assert (response.status, await response.json()) == (401, {"error": "Unauthorized"})
        async with http.get(f"{worker.url}/health") as response:
            assert response.status == 200
        assert worker.state.model_path == "base"
        key = {"Authorization": "Bearer k1"}
        async with http.post(
            f"{worker.url}/update_weights_from_disk", json=update, headers=key
        ) as response:
            assert response.status == 200
        assert worker.state.model_path == str(checkpoint)


async def test_mock_worker_takes_the_weights_path_as_its_name_yet_answers_to_any(
    http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    checkpoint = str(hf_checkpoint(tmp_path / "checkpoint-100"))
    async with MockWorker(model="policy") as worker:
        update = {"model_path": checkpoint}
        async with http.post(f"{worker.url}/update_weights_from_disk", json=update):
            pass
        async with http.get(f"{worker.url}/v1/models") as response:
            assert [m["id"] for m in (await response.json())["data"]] == [checkpoint]
        async with http.get(f"{worker.url}/v1/models/policy") as response:
            assert response.status == 404
            assert (await response.json())["error"]["code"] == "model_not_found"
        chat = {"model": "policy", "messages": [{"role": "user", "content": "hi"}]}
        async with http.post(f"{worker.url}/v1/chat/completions", json=chat) as response:
            assert (response.status, (await response.json())["model"]) == (200, "policy")
