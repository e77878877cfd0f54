"""Agent programs run by `agent-eval run --agent command` over mock workers, and their recorded
trajectories checked against what the worker logged it was asked and answered."""

from __future__ import annotations

import importlib
import json
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from agent_eval.testing.mock_worker import MockWorker
from tests.helpers.agent_programs import CHAT, MESSAGES, MODEL, RESPONSES, TRANSLATIONS, said
from tests.helpers.cli_runs import agent_eval, finish, lines


def dataset(path: Path, *rows: Mapping[str, Any]) -> Path:
    """A JSONL dataset of `rows`."""
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return path


async def run_command(
    argv: Sequence[str], data: Path, workers: Sequence[MockWorker], run_dir: Path, *settings: str
) -> tuple[int, str, list[dict[str, Any]]]:
    """`agent-eval run --agent command` of the program `argv` over `workers`: its exit code,
    its stderr and the records of samples.jsonl."""
    endpoints = [arg for worker in workers for arg in ("--endpoint", worker.url)]
    process = await agent_eval(
        "run", "--agent", "command", f"agent.options.cmd={shlex.join(argv)}",
        "--dataset", str(data), *endpoints, "-o", str(run_dir), *settings, cwd=run_dir.parent,
    )  # fmt: skip
    code, _, err = await finish(process, 240)
    return code, err, lines(run_dir) if (run_dir / "samples.jsonl").exists() else []


def assert_trajectory_is_what_the_worker_saw(
    trajectory: Mapping[str, Any], worker: MockWorker, route: str
) -> None:
    """The trajectory's calls are the worker's, call for call (worker, tokens, tool calls with
    their results), and its conversation is the last one the worker was sent and answered,
    through the proxy's translation where the worker lacks `route`."""
    served = worker.served()
    calls = trajectory["model_calls"]
    assert len(calls) == len(served), (calls, [seen.path for seen in served])
    for call, seen in zip(calls, served, strict=True):
        assert call["worker"] == worker.url
        assert (call["prompt_tokens"], call["completion_tokens"]) == _tokens(seen.answer)
    made = [entry[1:] for seen in served for entry in said(seen.answer) if entry[0] == "call"]
    results = {k: v for seen in served for k, v in _results(seen.request).items()}
    assert [
        (tool["name"], json.loads(tool["arguments"]), tool["result"])
        for tool in trajectory["tool_calls"]
    ] == [(name, arguments, results.get(call_id, "")) for call_id, name, arguments in made]
    _assert_last_exchange(trajectory["messages"], served[-1].path, route, served[-1])


def _tokens(answer: Mapping[str, Any]) -> tuple[int, int]:
    usage = answer["usage"]
    if "prompt_tokens" in usage:
        return usage["prompt_tokens"], usage["completion_tokens"]
    return usage["input_tokens"], usage["output_tokens"]


def _results(request: Mapping[str, Any]) -> dict[str, str]:
    """The tool results a Chat Completions or Responses request hands back, by call id."""
    if "messages" in request:
        return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}
    items = request["input"] if isinstance(request["input"], list) else []
    return {
        item["call_id"]: item["output"]
        for item in items
        if item.get("type") == "function_call_output"
    }


def _assert_last_exchange(messages: list[Any], path: str, route: str, seen: Any) -> None:
    """The conversation ends with the last request's messages, then its answer's."""
    answer_size = len(said(seen.answer)) if route == RESPONSES else 1
    sent, added = messages[:-answer_size], messages[-answer_size:]
    assert said(_as_answer(route, added)) == said(seen.answer)
    if route == path:
        assert _conversation(seen.request) == _conversation(_as_request(route, sent))
        return
    translate = importlib.import_module(TRANSLATIONS[route]).to_chat_request
    translated = translate(_as_request(route, sent))
    assert path == CHAT and _conversation(translated) == _conversation(seen.request)


def _as_answer(route: str, added: list[Any]) -> dict[str, Any]:
    if route == CHAT:
        return {"choices": [{"message": added[0]}]}
    if route == MESSAGES:
        return {"content": added[0]["content"]}
    return {"output": added}


def _as_request(route: str, sent: list[Any]) -> dict[str, Any]:
    if route == RESPONSES:
        return {"model": MODEL, "input": sent}
    return {"model": MODEL, "max_tokens": 1, "messages": sent}


def _conversation(request: Mapping[str, Any]) -> list[Any]:
    """A request's conversation, its system prompt (set apart in a trajectory's setups) left out."""
    if "input" in request:
        given = request["input"]
        return [{"role": "user", "content": given}] if isinstance(given, str) else given
    return [m for m in request["messages"] if m.get("role") not in ("system", "developer")]
