"""OpenAI's Codex CLI, unmodified, fixes a bug in a working directory through the proxy: the
scripted model answers with Codex's own shell tool call, Codex runs it, and the check passes."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_eval.testing.replies import Reply, ToolCall
from tests.helpers.agent_programs import (
    CHAT,
    RESPONSES,
    assert_record_is_what_the_worker_saw,
    python_example,
    recorded,
    run_agent,
)
from tests.helpers.codex import codex_bin
from tests.helpers.proxy import StartProxy, StartWorkers

BUGGY = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
SAMPLE = {"question": "The test in test_calc.py fails. Fix calc.py so that it passes."}
FIX = ToolCall("exec_command", json.dumps({"cmd": "sed -i 's/a - b/a + b/' calc.py"}))
DONE = "Fixed: add() in calc.py now returns a + b."


@pytest.mark.parametrize("native", [True, False], ids=["native", "translated"])
async def test_codex_exec_fixes_a_bug_through_the_proxy(
    start_workers: StartWorkers, start_proxy: StartProxy, tmp_path: Path, native: bool
) -> None:
    """Over a worker that serves /v1/responses, and over one the proxy translates it for."""
    codex = codex_bin()
    work = tmp_path / "work"
    work.mkdir()
    (work / "calc.py").write_text(BUGGY)
    (work / "test_calc.py").write_text(TEST)
    [worker] = await start_workers(1, responses_api=native)
    base_url = await start_proxy([worker], record_dir=tmp_path / "record")
    worker.script(Reply(tool_calls=[FIX]), Reply(DONE))
    finished = await run_agent(
        python_example("codex_cli.py"), base_url, SAMPLE, work, env={"CODEX_BIN": codex}
    )
    assert (finished.returncode, finished.answer) == (0, DONE), finished.stderr
    worker.assert_script_used_up()
    assert (work / "calc.py").read_text() == BUGGY.replace("a - b", "a + b")
    assert await _check(work) == 0
    [asked, told] = worker.served(RESPONSES if native else CHAT)
    assert asked.stream and SAMPLE["question"] in json.dumps(asked.request)
    [result] = _tool_results(told.request, native)
    assert result["call_id" if native else "tool_call_id"] == FIX.id
    assert_record_is_what_the_worker_saw(recorded(tmp_path / "record"), worker.served())


def _tool_results(request: dict[str, Any], native: bool) -> list[dict[str, Any]]:
    """The tool results a request hands back: Responses items, or chat `tool` messages."""
    if native:
        return [item for item in request["input"] if item["type"] == "function_call_output"]
    return [message for message in request["messages"] if message["role"] == "tool"]


async def _check(work: Path) -> int:
    """The attempt's check command: the working directory's own test."""
    check = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=work
    )
    return await check.wait()
