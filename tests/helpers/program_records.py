"""Attempts of the command runner: records whose trajectory carries the program it ran, its
calls recorded by the proxy in the Anthropic Messages shape."""

from __future__ import annotations

from typing import Any

from tests.helpers.view_runs import record

HOSTILE = "<script>document.title='owned'</script>"
"""Output a program may print; a page shows it as text, never runs it."""
DIFF = (
    "--- a/hello.py\n+++ b/hello.py\n@@ -1,2 +1,2 @@\n def hello():\n"
    "-    return 'hi'\n+    return 'hello, world'\n"
)
THOUGHT = "16 bottles a crate, 3 crates: multiply."
STDERR = f"warning: {HOSTILE}\nTraceback (most recent call last):\nValueError: almost\n"


def program(exit_code: int | None = 1, signal: str | None = None) -> dict[str, Any]:
    """A program's record as the command runner writes it: a failing run with a check."""
    return {
        "command": "python agent.py --task {id}",
        "exit_code": exit_code,
        "signal": signal,
        "stdout_tail": f"working...\n{HOSTILE}\n48\n",
        "stderr_tail": STDERR,
        "duration_s": 2.5,
        "answer_source": "stdout",
        "diff": DIFF,
        "check": {
            "command": "pytest -q",
            "exit_code": 1,
            "score": 0.0,
            "stdout_tail": "1 failed",
            "stderr_tail": "",
        },
    }


def program_record(sample: str, attempt: int, **ran: Any) -> dict[str, Any]:
    """An attempt of the command runner: an Anthropic tool loop as the proxy recorded it, on
    two workers, and the program it ran."""
    line = record(sample, attempt, correct=False)
    use = {"type": "tool_use", "id": "tu_1", "name": "multiply", "input": {"a": 16, "b": 3}}
    thought = {"type": "thinking", "thinking": THOUGHT, "signature": "sig"}
    result = {"type": "tool_result", "tool_use_id": "tu_1", "content": "48.0"}
    line["trajectory"].update(
        messages=[
            {"role": "user", "content": "A crate holds 16 bottles. How many in 3 crates?"},
            {
                "role": "assistant",
                "content": [thought, {"type": "text", "text": "Let me multiply."}, use],
            },
            {"role": "user", "content": [result]},
            {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "48"}]},
        ],
        program=program(**ran),
    )
    return line
