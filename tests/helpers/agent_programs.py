"""Agent programs of examples/agents/ run as agent-eval's `command` runner runs them, and
their proxy record checked against what the mock worker logged."""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from agent_eval.testing.worker_state import Served

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "agents"
MODEL = "mock-model"
CHAT, RESPONSES, MESSAGES = "/v1/chat/completions", "/v1/responses", "/v1/messages"
# The modules whose `to_chat_request` gives what the proxy sends a worker that lacks a route.
TRANSLATIONS = {
    RESPONSES: "agent_eval.proxy.responses.request",
    MESSAGES: "agent_eval.proxy.messages.request",
}
# The environment an agent program sees is this test's, less any real provider settings.
_PROVIDER_PREFIXES = ("OPENAI_", "ANTHROPIC_", "AGENT_EVAL_", "CODEX_")


@dataclass(frozen=True)
class Finished:
    """How an agent program ended: its exit code and its output."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def answer(self) -> str:
        """The last non-empty line of stdout: the command runner's answer."""
        lines = [line for line in self.stdout.splitlines() if line.strip()]
        return lines[-1].strip() if lines else ""


def agent_env(base_url: str, sample_file: Path, workdir: Path, key: str) -> dict[str, str]:
    """The variables the command runner sets, over this process's environment."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(_PROVIDER_PREFIXES)}
    return {
        **inherited,
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": key,
        "ANTHROPIC_BASE_URL": base_url.removesuffix("/v1"),
        "ANTHROPIC_API_KEY": key,
        "AGENT_EVAL_MODEL": MODEL,
        "AGENT_EVAL_SAMPLE_FILE": str(sample_file),
        "AGENT_EVAL_WORKDIR": str(workdir),
    }


async def run_agent(
    argv: Sequence[str],
    base_url: str,
    sample: Mapping[str, Any],
    workdir: Path,
    env: Mapping[str, str] | None = None,
    timeout: float = 120.0,
) -> Finished:
    """Run one agent program in `workdir` with the sample on stdin and in a file."""
    sample_file = await asyncio.to_thread(_place_sample, sample, workdir)
    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=workdir,
        env={**agent_env(base_url, sample_file, workdir, "attempt-key"), **(env or {})},
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(orjson.dumps(sample)), timeout)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    assert process.returncode is not None
    return Finished(process.returncode, out.decode(), err.decode())


def _place_sample(sample: Mapping[str, Any], workdir: Path) -> Path:
    """Make `workdir` and write the sample beside it, as the command runner does."""
    workdir.mkdir(parents=True, exist_ok=True)
    sample_file = workdir.parent / f"{workdir.name}-sample.json"
    sample_file.write_bytes(orjson.dumps(sample))
    return sample_file


def python_example(name: str) -> list[str]:
    """The command line of one Python example agent."""
    return [sys.executable, str(EXAMPLES / name)]


def recorded(record_dir: Path) -> list[dict[str, Any]]:
    """Every exchange the proxy recorded, in the order it recorded them."""
    return [
        orjson.loads(line)
        for path in sorted(record_dir.glob("*.jsonl"))
        for line in path.read_bytes().splitlines()
    ]


def assert_record_is_what_the_worker_saw(
    records: list[dict[str, Any]], served: list[Served]
) -> None:
    """Each recorded exchange is one the worker logged: the same request and answer, or, where
    the proxy translated the request to Chat Completions, the translation and the same words."""
    assert len(records) == len(served), (len(records), [s.path for s in served])
    for record, seen in zip(records, served, strict=True):
        assert record["status"] == seen.status
        if record["route"] == seen.path:
            assert record["request"] == seen.request
            assert _without_usage(record["response"]) == _without_usage(seen.answer)
            continue
        translate = importlib.import_module(TRANSLATIONS[record["route"]]).to_chat_request
        assert (seen.path, translate(record["request"])) == (CHAT, seen.request)
        assert said(record["response"]) == said(seen.answer)


def _without_usage(body: Mapping[str, Any]) -> dict[str, Any]:
    """An answer apart from its usage, which a stream reports only when asked."""
    return {k: v for k, v in body.items() if k != "usage"}


def said(answer: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """What a Chat Completions, Responses or Messages answer says: its texts, and its tool
    calls as (id, name, arguments)."""
    if "choices" in answer:
        message = answer["choices"][0]["message"]
        text = [("text", message["content"])] if message.get("content") else []
        return text + [
            ("call", c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in message.get("tool_calls") or []
        ]
    if "output" in answer:
        return [_said_item(item) for item in answer["output"]]
    return [
        ("text", block["text"])
        if block["type"] == "text"
        else ("call", block["id"], block["name"], block["input"])
        for block in answer["content"]
    ]


def _said_item(item: Mapping[str, Any]) -> tuple[Any, ...]:
    """A Responses output item as `said` gives it."""
    if item["type"] == "message":
        return ("text", "".join(part["text"] for part in item["content"]))
    return ("call", item["call_id"], item["name"], json.loads(item["arguments"]))
