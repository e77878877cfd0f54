"""The embedded model's llama.cpp workers: runs on them, the tool-call question put to them,
their processes. A test that uses a name from here is marked llamacpp (and slow)."""

from __future__ import annotations

import contextlib
import re
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp

from agent_eval.allocation import Allocation
from agent_eval.backends import WorkerConfig, get_backend
from agent_eval.backends.llamacpp import embedded_model
from agent_eval.backends.llamacpp_chat import render
from agent_eval.backends.llamacpp_fields import COMPLETIONS_PATH
from agent_eval.testing.ports import free_port
from tests.helpers.cli_runs import agent_eval, finish

# Imported when a test reads tokens: conftest, and so every xdist worker, imports this module.
if TYPE_CHECKING:
    from llama_cpp import Llama

MULTIPLY = {
    "type": "function",
    "function": {
        "name": "multiply",
        "description": "Multiply two numbers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    },
}


QUESTION = [{"role": "user", "content": "What is 12 times 7? Use the multiply tool."}]


def servers_on(ports: set[int]) -> list[int]:
    """Pids of llama.cpp servers listening on any of these ports, read from /proc."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if b"agent_eval.backends.llamacpp_server" in args and any(
            str(p).encode() in args for p in ports
        ):
            found.append(int(cmdline.parent.name))
    return found


MODEL = "smollm2-135m-instruct"
THREADS_IN_TESTS = 1
"""llama.cpp threads per worker a test starts: under xdist the other worker's tests hold the
second core, and llama.cpp's threads spin at every step waiting for each other (two took twice
the CPU and no less wall; an attempt 15 to 41 s on a loaded machine, 14 s with one)."""
ONE_THREAD = f"rollout.worker.threads={THREADS_IN_TESTS}"
"""The setting that gives a run's workers THREADS_IN_TESTS."""
COLOURS = [{"role": "user", "content": "Name three colours."}]
CHAT = {"model": MODEL, "messages": COLOURS, "max_tokens": 24, "temperature": 0}
"""A short chat request answered the same way every time (temperature 0): 11 tokens of text,
then the end-of-turn token `<|im_end|>` ends it."""
TOOL_CALL = {**CHAT, "messages": QUESTION, "tools": [MULTIPLY], "tool_choice": "required"}


def completion_of(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The completions request for the prompt the chat handler renders."""
    return {"model": MODEL, "prompt": render(messages, tools), "max_tokens": 24, "temperature": 0}


async def post(url: str, path: str, body: dict[str, Any], via: str | None = None) -> bytes:
    """The answer's bytes from the worker at `url` (or from `via`, a proxy's base before /v1).
    An unrelated prompt goes first, so every request reads its prompt from the same cache
    state: a prompt the worker holds whole has its last token read alone, and logits summed
    unlike a batch's differ in their last bits."""
    async with aiohttp.ClientSession() as http:
        forget = {"model": MODEL, "prompt": "Hello", "max_tokens": 1}
        async with http.post(url + COMPLETIONS_PATH, json=forget) as answer:
            assert answer.status == 200, await answer.text()
        async with http.post((via or url) + path, json=body) as answer:
            assert answer.status == 200, await answer.text()
            return await answer.read()


def comparable(answer: bytes) -> str:
    """An answer with what differs between any two answers (ids, times, a stream's pings)
    made alike."""
    text = re.sub(r"^: ping.*\n\n", "", answer.decode(), flags=re.MULTILINE)
    return re.sub(r'"(id|created)": ?("[^"]*"|\d+)', r'"\1": _', text)


async def run_embedded(*args: str, cwd: Path) -> tuple[int, str, str]:
    """`agent-eval ARGS` on the embedded model's workers, to its end (ten minutes at most):
    exit code, stdout and stderr."""
    return await finish(await agent_eval(*args, cwd=cwd), 600)


@contextlib.contextmanager
def embedded_worker(log: Path) -> Iterator[str]:
    """One embedded worker (4,096 tokens of context, one thread), started as the local
    scheduler would, its output in `log`: its URL, until it is stopped."""
    port = free_port("127.0.0.1")
    command = get_backend("llamacpp").command(
        WorkerConfig(context_length=4096, threads=THREADS_IN_TESTS),
        Allocation.parse("llamacpp:d1"),
        "127.0.0.1",
        port,
    )
    with log.open("wb") as output:
        process = subprocess.Popen(command.argv, stdout=output, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_until_serving(url + command.ready_path, process)
            yield url
        finally:
            process.terminate()
            process.wait(30)


def embedded_tokenizer() -> Llama:
    """The embedded model's tokenizer, without its weights."""
    from llama_cpp import Llama

    return Llama(model_path=str(embedded_model()), vocab_only=True, verbose=False)


def _wait_until_serving(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.poll() is None, "the llama.cpp worker exited during start-up"
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("the llama.cpp worker did not start within 120 s")
