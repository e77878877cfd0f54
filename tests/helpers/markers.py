"""The markers a test carries, read from what it uses, so that nobody has to remember them:
conftest puts them on every collected test, and `pytest -m "not slow"` is the fast loop."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from functools import cache
from types import CodeType, FunctionType, ModuleType

import pytest

# Fixtures that bring an outside part along.
FIXTURES = {"browser": "browser", "on_terminal": "tmux"}
# Helper modules whose names, used by a test, mean it drives that outside part.
HELPERS = {
    "tests.helpers.browser": "browser",
    "tests.helpers.terminal": "tmux",
    "tests.helpers.llamacpp": "llamacpp",
}
# Test modules about one outside part from their first test to their last.
MODULES = {
    "test_llamacpp_agents": "llamacpp",
    "test_llamacpp_workers": "llamacpp",
    "test_ray_scheduler": "ray",
    "test_slurm_scheduler": "slurm",
    "test_slurm_test_only": "slurm",
}
# A test parametrized by the scheduler it runs on needs that scheduler.
SCHEDULERS = {"ray", "slurm"}
# Real model servers and clusters take seconds to start: what uses them is slow.
SLOW = {"llamacpp", "ray", "slurm"}
# Parts that must not run beside themselves under xdist (one cluster, ports of its own, the
# CPU a model needs), and helpers whose measurements another test's load would disturb.
GROUPS = {"llamacpp", "ray", "slurm"}
GROUPED_NAMES = {"rss_mb": "memory"}


def markers_of(item: pytest.Function) -> set[str]:
    """The outside parts (browser, tmux, llamacpp, ray, slurm) a test needs, and `slow`."""
    names = set(item.fixturenames) | used_names(item)
    helpers = helper_imports(item.module)
    found = {FIXTURES[name] for name in names if name in FIXTURES}
    found |= {HELPERS[helpers[name]] for name in names if helpers.get(name) in HELPERS}
    module = item.module.__name__.rpartition(".")[2]
    if module in MODULES:
        found.add(MODULES[module])
    callspec = getattr(item, "callspec", None)
    if callspec is not None and callspec.params.get("scheduler") in SCHEDULERS:
        found.add(callspec.params["scheduler"])
    return found | ({"slow"} if found & SLOW else set())


def group_of(item: pytest.Function, markers: set[str]) -> str | None:
    """The xdist group a test runs in, one worker at a time; None when it can run anywhere."""
    grouped = sorted(markers & GROUPS) or sorted(
        GROUPED_NAMES[name] for name in used_names(item) if name in GROUPED_NAMES
    )
    return grouped[0] if grouped else None


def used_names(item: pytest.Function) -> set[str]:
    """Global names a test reads, with those read by the functions and fixtures of its own
    module that it calls or asks for, followed to the end."""
    module = item.module
    seen: set[str] = set()
    todo = [item.function, *(module.__dict__.get(name) for name in item.fixturenames)]
    while todo:
        current = _function(todo.pop())
        if current is None or current.__module__ != module.__name__:
            continue
        fresh = set(_globals_read(current.__code__)) - seen
        seen |= fresh
        todo += [module.__dict__.get(name) for name in fresh]
    return seen


def _function(found: object) -> FunctionType | None:
    """The plain function behind a test, a fixture (pytest wraps them) or a decorated helper."""
    found = getattr(found, "_fixture_function", found)
    found = inspect.unwrap(found) if callable(found) else found
    return found if isinstance(found, FunctionType) else None


def _globals_read(code: CodeType) -> Iterator[str]:
    """The global names a code object reads, nested code included."""
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _globals_read(const)


@cache
def helper_imports(module: ModuleType) -> dict[str, str]:
    """Each name the test module imports from a helper module, and that module."""
    tree = ast.parse(inspect.getsource(module))
    return {
        alias.asname or alias.name: node.module
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tests.helpers.")
        for alias in node.names
    }
