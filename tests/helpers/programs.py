"""Agent programs for the `command` runner's tests: small Python scripts written into tmp_path."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from openai import AsyncOpenAI

from agent_eval.agents import RunContext

KEY = "sk-attempt-secret-1234"
"""The proxy key the test contexts carry: no record or log may show it."""


def agent_script(folder: Path, body: str, name: str = "agent.py") -> Path:
    """A Python program with `body` as its text, written into `folder`."""
    path = folder / name
    path.write_text("import json, os, sys, time, signal, subprocess\n" + body)
    return path


def python_command(script: Path, *args: str) -> str:
    """A shell command line that runs `script` with this interpreter."""
    return shlex.join([sys.executable, str(script)]) + "".join(f" {arg}" for arg in args)


def context(
    session_id: str = "s1-0", time_limit: float | None = 60, run_dir: Path | None = None
) -> RunContext:
    """A run context whose client names a proxy (which these programs never call) and KEY."""
    client = AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key=KEY)
    return RunContext(client, "mock-model", session_id, 1, time_limit=time_limit, run_dir=run_dir)


def running(pid: int) -> bool:
    """Whether a process runs (a zombie waiting for its parent to reap it does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")
