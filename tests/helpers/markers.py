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
FIXTURES = {
    "browser": "browser",
    "on_terminal": "tmux",
    "embedded_url": "llamacpp",
    "ray_cluster": "ray",
}
# Fixtures that are slow themselves (the GSM8K test set perturbed whole, once a session), each
# with the xdist group its users share, so that one worker alone computes it.
SLOW_FIXTURES = {"gsm8k_variants": "gsm8k"}
# Helper modules whose names, used by a test, mean it drives that outside part.
HELPERS = {
    "tests.helpers.browser": "browser",
    "tests.helpers.terminal": "tmux",
    "tests.helpers.llamacpp": "llamacpp",
    "tests.helpers.codex": "codex",
}
# Test modules about one outside part from their first test to their last.
MODULES = {
    "test_llamacpp_agents": "llamacpp",
    "test_llamacpp_workers": "llamacpp",
    "test_llamacpp_tokens": "llamacpp",
    "test_ray_scheduler": "ray",
    "test_ray_engine": "ray",
    "test_slurm_scheduler": "slurm",
    "test_slurm_test_only": "slurm",
}
# A test parametrized by the scheduler it runs on needs that scheduler.
SCHEDULERS = {"ray", "slurm"}
# Outside parts that take seconds to start (a browser, a terminal, model servers, clusters):
# what uses them is slow.
SLOW = {"browser", "tmux", "llamacpp", "ray", "slurm", "codex"}
# Helpers that make a test slow: agent-eval in a process of its own imports the whole package
# (seconds apiece on a busy machine); resident memory is measured over soaks of many MB; a
# tune job plays whole trials; the GSM8K test set holds 1,319 problems; an agent program is a
# process of its own that imports its framework (smolagents, the Agents SDK, a coding CLI);
# AgentDojo's own pipeline replays hundreds of tasks, each in an environment parsed anew.
SLOW_HELPERS = {
    ("tests.helpers.agent_programs", "run_agent"),
    ("tests.helpers.cli_runs", "CLI"),
    ("tests.helpers.cli_runs", "agent_eval"),
    ("tests.helpers.command_runs", "run_command"),
    ("tests.helpers.proxy_calls", "serve_process"),
    ("tests.helpers.processes", "rss_mb"),
    ("tests.helpers.tune_jobs", "tune_job"),
    ("tests.helpers.shared_data", "gsm8k_path"),
    ("tests.helpers.agentdojo", "both"),
}
# Names whose reading makes a test heavy: it starts processes of its own (a subprocess, the
# reward pool, a whole evaluation with its scoring pool, local workers: each imports its
# packages anew, seconds apiece on a busy machine), or draws many examples with hypothesis.
HEAVY_NAMES = {
    "subprocess",
    "create_subprocess_exec",
    "executable",
    "RewardScorer",
    "evaluate",
    "LocalScheduler",
    "given",
}
# Parts that must not run beside themselves under xdist (one cluster, ports of its own, the
# CPU a model needs), and the memory soaks, whose measure another test's load would disturb.
# A test has one group: a cluster's before llama.cpp's (a whole run on Ray is a Ray test).
GROUPS = ("ray", "slurm", "llamacpp")
GROUPED_HELPERS = {("tests.helpers.processes", "rss_mb"): "memory"}


def markers_of(item: pytest.Function) -> set[str]:
    """The outside parts (browser, tmux, llamacpp, ray, slurm, codex) a test needs, and `slow`."""
    helpers = helpers_used(item)
    found = {FIXTURES[name] for name in item.fixturenames if name in FIXTURES}
    found |= {HELPERS[module] for module, _ in helpers if module in HELPERS}
    module = item.module.__name__.rpartition(".")[2]
    if module in MODULES:
        found.add(MODULES[module])
    callspec = getattr(item, "callspec", None)
    if callspec is not None and callspec.params.get("scheduler") in SCHEDULERS:
        found.add(callspec.params["scheduler"])
    slow = found & SLOW or helpers & SLOW_HELPERS or SLOW_FIXTURES.keys() & set(item.fixturenames)
    return found | ({"slow"} if slow or heavy(item) else set())


def heavy(item: pytest.Function) -> bool:
    """Whether a test starts processes of its own, or is a property test drawing many examples."""
    return bool(used_names(item) & HEAVY_NAMES) or hasattr(item.function, "hypothesis")


def group_of(item: pytest.Function, markers: set[str]) -> str | None:
    """The xdist group a test runs in, one worker at a time; None when it can run anywhere."""
    grouped = [group for group in GROUPS if group in markers] or sorted(
        GROUPED_HELPERS[used] for used in helpers_used(item) if used in GROUPED_HELPERS
    )
    grouped += sorted(SLOW_FIXTURES[name] for name in item.fixturenames if name in SLOW_FIXTURES)
    return grouped[0] if grouped else None


def carry_xdist_groups(items: list[pytest.Item]) -> None:
    """On an xdist worker, each test's id with its group (`nodeid@group`), which is what
    `--dist loadgroup` schedules by: xdist 3.8 writes it to the `_nodeid` that pytest 9.2 no
    longer reads (pytest-xdist issue 1386), so the groups would do nothing."""
    for item in items:
        written = getattr(item, "_nodeid", None)
        if written is not None and written != item.nodeid:
            from _pytest.nodeid import NodeId  # pytest 9.2's: on an older one, nothing gets here

            item._id = NodeId.parse(written)


@cache
def helpers_used(item: pytest.Function) -> set[tuple[str, str]]:
    """The helpers a test uses, as (helper module, name)."""
    imports = helper_imports(item.module)
    return {(imports[name], name) for name in used_names(item) if name in imports}


@cache
def used_names(item: pytest.Function) -> set[str]:
    """The names (globals and attributes) a test reads, with those read by the functions and
    fixtures of its own module that it calls or asks for, followed to the end."""
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
    """The names (globals and attributes) a code object reads, nested code included."""
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
