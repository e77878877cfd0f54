"""A broken pipe inside a command is a failure to show, not click's quiet exit 1; a reader of
our own output that went away (`agent-eval ... | head`) still ends the command quietly."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from types import SimpleNamespace
from typing import TextIO

import pytest

from agent_eval.cli import common

OUTSIDE = SimpleNamespace(obj=False)  # a command run from the shell, not from another command


def a_child_pipe_breaks() -> None:
    raise BrokenPipeError(32, "Broken pipe")


@pytest.fixture
def reader_gone() -> Iterator[TextIO]:
    """A stdout whose pipe has no reader any more."""
    read, write = os.pipe()
    os.close(read)
    with os.fdopen(write, "w") as stdout:
        yield stdout


def test_a_broken_pipe_of_our_own_is_raised_as_a_failure_with_its_cause() -> None:
    with pytest.raises(RuntimeError, match="a pipe between agent-eval's own processes") as caught:
        common.guarded(OUTSIDE, a_child_pipe_breaks)  # type: ignore[arg-type]
    assert isinstance(caught.value.__cause__, BrokenPipeError)


def test_a_reader_of_our_output_gone_leaves_the_broken_pipe_to_click(
    reader_gone: TextIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdout", reader_gone)
    with pytest.raises(BrokenPipeError):
        common.guarded(OUTSIDE, a_child_pipe_breaks)  # type: ignore[arg-type]
