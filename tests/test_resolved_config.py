"""A run's saved config names every value it used, and running from it plays the same run."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from agent_eval.allocation import Allocation
from agent_eval.backends import get_backend
from agent_eval.run.config import CONFIG_FILE, load_run_config
from agent_eval.run.evaluation import evaluate, plan, resolved_config
from tests.helpers.observer import QuietObserver
from tests.helpers.proxy import StartWorkers


async def run_and_read(path: Path | None, run_dir: Path, overrides: list[str]) -> dict[str, Any]:
    """Run a config to its end; the config.yaml it saved."""
    config = load_run_config(path, {}, [*overrides, f"output.dir={run_dir}"])
    await evaluate(plan(config), QuietObserver())
    return yaml.safe_load((run_dir / CONFIG_FILE).read_text())


async def test_the_saved_config_is_resolved_and_replays_the_run(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = await start_workers(1)
    given = [f"rollout.endpoints=['{worker.url}']", "dataset.limit=2", "eval.concurrency=2"]
    first = await run_and_read(None, tmp_path / "first", given)
    used = {
        "dataset.name": "gsm8k_mini",  # the agent's own sample set
        "agent.max_turns": 8,  # the runner's default
        "agent.api": "chat_completions",
        "model.name": "mock-model",  # learnt from the workers
        "eval.ks": [1],
    }
    for key, value in used.items():
        section, name = key.split(".")
        assert first[section][name] == value, key
    assert isinstance(first["reward"]["workers"], int) and first["reward"]["workers"] >= 1

    again = await run_and_read(tmp_path / "first" / CONFIG_FILE, tmp_path / "again", [])
    assert again["output"].pop("dir") == str(tmp_path / "again")
    first["output"].pop("dir")
    assert again == first


def test_runner_options_come_from_the_runner() -> None:
    config = load_run_config(None, {"agent.name": "multi_turn_chat"}, ["output.dir=x"])
    resolved = resolved_config(config)
    assert (resolved.agent.max_turns, resolved.agent.api) == (6, "chat_completions")
    assert resolved.agent.options == {"tools": False}
    assert resolved.dataset.name == "sessions_mini"
    assert config.agent.max_turns is None, "the config given is left as it was"
    assert resolved_config(resolved) == resolved


def test_launched_workers_settings_come_from_their_backend() -> None:
    config = load_run_config(None, {}, ["rollout.backend=llamacpp:d2"])
    assert (config.model.path, config.rollout.worker.threads) == (None, None)
    resolved = resolved_config(config)
    assert resolved.model.path.endswith(".gguf") and Path(resolved.model.path).is_file()
    assert resolved.rollout.worker.threads == max(1, (os.cpu_count() or 1) // 2)
    # The worker is started with exactly what the saved config says.
    backend = get_backend("llamacpp")
    argv = backend.command(resolved.worker(), Allocation.parse("llamacpp:d2"), "127.0.0.1", 1).argv
    assert argv[argv.index("--model") + 1] == resolved.model.path
    threads = str(resolved.rollout.worker.threads)
    # Prompts too: the server's default would read them on every core in each worker.
    assert (
        argv[argv.index("--n_threads") + 1] == argv[argv.index("--n_threads_batch") + 1] == threads
    )
    assert resolved_config(resolved) == resolved
