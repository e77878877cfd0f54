"""Test modules share code through tests/helpers/ only: none imports another test module or
conftest, and no helper imports a test module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
MODULES = sorted([*TESTS.glob("test_*.py"), TESTS / "conftest.py", *TESTS.glob("helpers/*.py")])


def imported(source: str) -> set[str]:
    """The modules a module's source imports, at any depth (inside functions too), as dotted
    names; `from tests import x` gives `tests` and `tests.x`, relative ones start with a dot."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            found |= {base, *(f"{base}.{alias.name}" for alias in node.names)}
    return found


def forbidden(name: str) -> bool:
    """Whether an imported name is a test module or conftest, or reaches one relatively."""
    last = name.rpartition(".")[2]
    return name.startswith(".") or (
        name.split(".")[0] == "tests" and (last.startswith("test_") or last == "conftest")
    )


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(TESTS)))
def test_a_test_module_imports_no_other_test_module(path: Path) -> None:
    wrong = sorted(name for name in imported(path.read_text()) if forbidden(name))
    assert not wrong, f"{path.name} imports {wrong}: move what it needs to tests/helpers/"


@pytest.mark.parametrize(
    ("source", "wrong"),
    [
        ("from tests.test_cli_run import finish", True),
        ("from tests.conftest import eventually", True),
        ("import tests.test_report", True),
        ("from tests import test_report", True),
        ("from .test_report import record", True),
        ("def f():\n    from tests.test_metrics import attempt", True),
        ("from tests.helpers.waits import eventually", False),
        ("from agent_eval.metrics import summarize", False),
    ],
)
def test_the_scan_finds_every_form_of_import(source: str, wrong: bool) -> None:
    assert any(forbidden(name) for name in imported(source)) is wrong
