"""`agent-eval run eval.tokens=true`: every model call's token ids and logprobs end in
samples.jsonl, taken by the proxy from the worker's own fields, at a small cost in bytes."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from agent_eval.testing.mock_worker import MockWorker
from agent_eval.testing.toy_tokens import ANSWER_PROMPT, END, decode
from agent_eval.testing.worker_state import Behavior
from tests.helpers.cli_runs import ROWS, agent_eval, finish, lines, write_dataset


async def _run(tmp_path: Path, name: str, *settings: str) -> Path:
    """A math_calculator run over a two-step mock worker that speaks vLLM's token fields."""
    async with AsyncExitStack() as stack:
        worker = MockWorker("w", behavior=Behavior(two_step=True), token_fields="vllm")
        await stack.enter_async_context(worker)
        data, run_dir = write_dataset(tmp_path / "say.jsonl"), tmp_path / name
        process = await agent_eval(
            "run", "--agent", "math_calculator", "--dataset", str(data), "--endpoint", worker.url,
            "-n", "1", "-o", str(run_dir), *settings, cwd=tmp_path,
        )  # fmt: skip
        code, _, err = await finish(process, timeout=300)
        assert code == 0, err
    return run_dir


@pytest.fixture(scope="module")
def tokens_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One run with eval.tokens=true, made once: its tests only read it."""
    return asyncio.run(_run(tmp_path_factory.mktemp("tokens"), "tokens", "eval.tokens=true"))


def _tokens(line: dict[str, Any]) -> list[dict[str, Any]]:
    return [call["tokens"] for call in line["trajectory"]["model_calls"]]


def test_a_run_keeps_every_calls_tokens_in_its_samples(tokens_run: Path) -> None:
    played = lines(tokens_run)
    assert len(played) == ROWS
    for line in played:
        first, second = _tokens(line)
        # The agent's second call re-sends the first answer: its prompt continues the first
        # call's prompt and answer, token for token, as the toy template renders them.
        assert second["prompt_ids"][: len(first["prompt_ids"]) + len(first["completion_ids"])] == (
            first["prompt_ids"] + first["completion_ids"]
        )
        answer = decode(second["completion_ids"])
        assert answer == line["trajectory"]["messages"][-1]["content"] + END
        assert decode(second["prompt_ids"]).endswith(ANSWER_PROMPT)
        assert len(second["logprobs"]) == len(second["completion_ids"])


async def test_the_samples_grow_little_per_token(tmp_path: Path, tokens_run: Path) -> None:
    plain, captured = await _run(tmp_path, "plain", "eval.capture=true"), tokens_run
    without = (plain / "samples.jsonl").stat().st_size
    grown = (captured / "samples.jsonl").stat().st_size - without
    counted = sum(
        len(t["prompt_ids"]) + len(t["completion_ids"])
        for line in lines(captured)
        for t in _tokens(line)
    )
    per_thousand = grown / counted * 1000
    # Arrays, not an object per token: a few bytes an id, about 20 a full-precision logprob.
    assert 0 < per_thousand < 8_000
