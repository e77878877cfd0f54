"""The view's model calls: the sample endpoint marks each call's continuity without sending its
tokens, and one call's tokens and logprobs come on their own request, with their text where the
run's model is a GGUF file here (the embedded model's, by default), ids alone where not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from llama_cpp import Llama

from agent_eval.agents.trajectory import CallTokens
from agent_eval.backends.llamacpp import embedded_model
from agent_eval.view.server import create_app
from tests.helpers.token_calls import RENDERED_ANEW, conversation, drift_index, line_with_tokens
from tests.helpers.view_runs import get_json, record, write_run

CALLS = conversation(3, drift_at=2)
SAMPLE = "/api/runs/runs/tokens/samples/q"
ON_VLLM = {"rollout.backend": "vllm:d1", "model.path": "HuggingFaceTB/SmolLM2-135M-Instruct"}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    lines = [record("other", 0, True), line_with_tokens("q", 0, [*CALLS, None])]
    write_run(runs / "tokens", lines)
    return runs


async def test_the_sample_marks_each_call_and_leaves_its_tokens_out(
    client: TestClient[Any, Any],
) -> None:
    body = await get_json(client, SAMPLE)
    assert body["records"] == [1]
    calls = body["attempts"][0]["trajectory"]["model_calls"]
    assert all("tokens" not in call for call in calls)
    marks = [call["continuity"] for call in calls]
    prompt, completion = len(CALLS[2].prompt_ids), len(CALLS[2].completion_ids)
    drift = {
        "index": drift_index(CALLS, 2),
        "expected": CALLS[1].completion_ids[-1],
        "found": RENDERED_ANEW,
    }
    assert marks[0] == {"prompt": 12, "completion": 3, "previous": None, "drift": None}
    assert (marks[1]["previous"], marks[1]["drift"]) == (0, None)
    assert marks[2] == {"prompt": prompt, "completion": completion, "previous": 1, "drift": drift}
    assert marks[3] is None


async def test_calls_that_named_no_worker_leave_the_run_page_whole(
    client: TestClient[Any, Any],
) -> None:
    body = await get_json(client, "/api/runs/runs/tokens/summary")
    assert body["workers"] == {"w0": 1, "w1": 1}  # the other record's; these name none
    assert body["summary"]["continuity"]["drift_rate"]["n"] == 2


async def test_a_row_counts_its_turns_checked_and_drifted(client: TestClient[Any, Any]) -> None:
    body = await get_json(client, "/api/runs/runs/tokens/rows")
    (row,) = [row for row in body["rows"] if row["sample_id"] == "q"]
    counts = {"tokenized": 3, "untokenized": 1, "checked": 2, "drifted": 1}
    assert row["continuity"] == counts


async def test_a_calls_tokens_come_on_their_own_request(client: TestClient[Any, Any]) -> None:
    body = await get_json(client, "/api/runs/runs/tokens/records/1/calls/2/tokens")
    assert (body["prompt_ids"], body["completion_ids"]) == (CALLS[2].prompt_ids, [126, 127, 128])
    assert body["logprobs"] == CALLS[2].logprobs
    assert body["continuity"]["drift"]["index"] == drift_index(CALLS, 2)


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("records/1/calls/3/tokens", "has no tokens recorded"),
        ("records/1/calls/4/tokens", "this attempt has 4"),
        ("records/1/calls/x/tokens", "give its index"),
        ("records/2/calls/0/tokens", "records go from 0 to 1"),
        ("records/0/calls/0/tokens", "has no tokens recorded"),
    ],
)
async def test_a_call_without_tokens_is_a_404_that_says_why(
    client: TestClient[Any, Any], path: str, says: str
) -> None:
    body = await get_json(client, f"/api/runs/runs/tokens/{path}", status=404)
    assert says in body["error"]


async def test_a_calls_tokens_come_with_their_text_by_the_runs_tokenizer(
    client: TestClient[Any, Any],
) -> None:
    vocab = Llama(model_path=str(embedded_model()), vocab_only=True, verbose=False)
    body = await get_json(client, "/api/runs/runs/tokens/records/1/calls/2/tokens")
    text = body["text"]
    assert text["tokenizer"] == embedded_model().name and body["text_note"] is None
    for ids, texts in (
        (CALLS[2].prompt_ids, text["prompt"]),
        (CALLS[2].completion_ids, text["completion"]),
    ):
        assert texts == [
            vocab.detokenize([i], special=True).decode(errors="backslashreplace") for i in ids
        ]


async def test_ids_the_tokenizer_lacks_and_models_not_here_have_no_text(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    beyond = CallTokens([1, 2, 10**6], [2, -1], [-0.1, -0.2])
    write_run(runs / "gguf", [line_with_tokens("q", 0, [beyond])])
    write_run(runs / "vllm", [line_with_tokens("q", 0, [beyond])], settings=ON_VLLM)
    async with TestClient(TestServer(create_app([runs]))) as client:
        here = await get_json(client, "/api/runs/runs/gguf/records/0/calls/0/tokens")
        away = await get_json(client, "/api/runs/runs/vllm/records/0/calls/0/tokens")
    assert here["text"]["prompt"][2] is None and here["text"]["completion"] == ["<|im_end|>", None]
    assert away["text"] is None and "is not a GGUF file on this machine" in away["text_note"]
