"""OpenAI's Codex CLI for the tests: the one scripts/install-codex.sh puts in .tools/codex, or
the one $CODEX_BIN names. Where it is missing its tests skip, or fail where CI set
AGENT_EVAL_REQUIRE_CODEX."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REQUIRE = "AGENT_EVAL_REQUIRE_CODEX"
INSTALLED = Path(__file__).resolve().parents[2] / ".tools" / "codex" / "node_modules" / ".bin"


def codex_bin() -> str:
    """The Codex CLI to run; skips (or fails) the test when there is none."""
    named = os.environ.get("CODEX_BIN")
    found = named or shutil.which("codex", path=str(INSTALLED))
    if found and shutil.which(found):
        return found
    reason = f"no Codex CLI at {named or INSTALLED} (bash scripts/install-codex.sh installs it)"
    if os.environ.get(REQUIRE):
        pytest.fail(f"{reason}, but {REQUIRE} is set: the Codex CLI's tests must run here")
    pytest.skip(reason)
