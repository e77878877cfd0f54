"""The GSM8K test set from the shared data beside the repository, for the tests that read it.

It is reached from the repository root (`../shared`), or where AGENT_EVAL_SHARED names the
shared folder; a test that needs it skips where it is missing, and fails instead where CI
sets AGENT_EVAL_REQUIRE_SHARED.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REQUIRE = "AGENT_EVAL_REQUIRE_SHARED"
REPOSITORY = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("AGENT_EVAL_SHARED") or REPOSITORY.parent / "shared")
GSM8K = SHARED / "data" / "gsm8k" / "test.jsonl"


def gsm8k_path() -> Path:
    """The GSM8K test set's file; the test skips (fails, under CI's switch) where it is missing."""
    if not GSM8K.is_file():
        reason = f"the GSM8K test set is not at {GSM8K} (AGENT_EVAL_SHARED names the shared folder)"
        if os.environ.get(REQUIRE):
            pytest.fail(f"{reason}, but {REQUIRE} is set: the tests that read it must run here")
        pytest.skip(reason)
    return GSM8K
