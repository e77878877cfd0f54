"""The embedded model's llama.cpp workers: runs on them, the tool-call question put to them,
their processes. A test that uses a name from here is marked llamacpp (and slow)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.cli_runs import agent_eval, finish

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


async def run_embedded(*args: str, cwd: Path) -> tuple[int, str, str]:
    """`agent-eval ARGS` on the embedded model's workers, to its end (ten minutes at most):
    exit code, stdout and stderr."""
    return await finish(await agent_eval(*args, cwd=cwd), 600)
