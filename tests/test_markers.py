"""conftest marks each test by what it uses (tests/helpers/markers.py): the rules are read
here on small test modules written to disk, and on this module's own tests."""

from __future__ import annotations

import importlib.util
import inspect
import os
from dataclasses import dataclass, field
from pathlib import Path
from types import FunctionType, ModuleType, SimpleNamespace
from typing import Any

import pytest

from tests.helpers.markers import carry_xdist_groups, group_of, markers_of
from tests.helpers.processes import rss_mb


@dataclass(eq=False)
class Sample:
    """A test as conftest's hook sees it: its module, function, fixtures and parameters."""

    module: ModuleType
    function: FunctionType
    fixturenames: list[str]
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def callspec(self) -> SimpleNamespace | None:
        return SimpleNamespace(params=self.params) if self.params else None


def load(folder: Path, source: str, name: str = "test_sample") -> ModuleType:
    """The test module `name` of `source`, written to `folder` and imported."""
    path = folder / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def marked(module: ModuleType, **params: Any) -> dict[str, tuple[set[str], str | None]]:
    """Each test of `module` (given `params`): the markers it would carry and its group."""
    found = {}
    for name, function in vars(module).items():
        if name.startswith("test_") and isinstance(function, FunctionType):
            fixtures = [p for p in inspect.signature(function).parameters if p not in params]
            sample: Any = Sample(module, function, fixtures, params)
            markers = markers_of(sample)
            found[name] = (markers, group_of(sample, markers))
    return found


def test_a_test_using_the_browser_or_the_terminal_is_marked_so(tmp_path: Path) -> None:
    module = load(
        tmp_path,
        """
from tests.helpers.view_runs import cells

async def test_by_fixture(browser): ...
async def test_by_helper(page): await cells(page, "table")
async def test_on_a_terminal(on_terminal): ...
def test_plain(tmp_path): ...
""",
    )
    assert marked(module) == {
        "test_by_fixture": ({"browser", "slow"}, None),
        "test_by_helper": (set(), None),  # view_runs serves pages; the fixture brings the browser
        "test_on_a_terminal": ({"tmux", "slow"}, None),
        "test_plain": (set(), None),
    }


def test_a_test_starting_agent_eval_in_a_process_of_its_own_is_slow(tmp_path: Path) -> None:
    module = load(
        tmp_path,
        """
from tests.helpers.cli_runs import agent_eval, finish, lines

async def test_in_a_process(tmp_path): await finish(await agent_eval("run", cwd=tmp_path))
def test_reading_what_it_wrote(tmp_path): assert lines(tmp_path) == []
""",
    )
    assert marked(module) == {
        "test_in_a_process": ({"slow"}, None),
        "test_reading_what_it_wrote": (set(), None),
    }


def test_processes_of_its_own_and_property_tests_are_slow(tmp_path: Path) -> None:
    module = load(
        tmp_path,
        """
import subprocess, sys
from hypothesis import given, strategies as st

def test_a_subprocess(): subprocess.run([sys.executable, "-c", "pass"], check=True)

@given(st.integers())
def test_a_property(n): ...

def test_a_property_inside():
    @given(st.integers())
    def check(n): ...
    check()
""",
    )
    assert marked(module) == {
        "test_a_subprocess": ({"slow"}, None),
        "test_a_property": ({"slow"}, None),
        "test_a_property_inside": ({"slow"}, None),
    }


def test_a_test_reaching_llamacpp_through_its_own_functions_is_slow_and_grouped(
    tmp_path: Path,
) -> None:
    module = load(
        tmp_path,
        """
import pytest
from tests.helpers.llamacpp import servers_on

def left(ports): return servers_on(ports)

@pytest.fixture
def none_left(): assert left({1}) == []

def test_directly(): assert servers_on({1}) == []
def test_through_a_function(): assert left({1}) == []
def test_through_a_fixture(none_left): ...
""",
    )
    llamacpp = ({"llamacpp", "slow"}, "llamacpp")
    assert marked(module) == {
        "test_directly": llamacpp,
        "test_through_a_function": llamacpp,
        "test_through_a_fixture": llamacpp,
    }


@pytest.mark.parametrize(
    ("scheduler", "expected"),
    [
        ("local", (set(), None)),
        ("ray", ({"ray", "slow"}, "ray")),
        ("slurm", ({"slurm", "slow"}, "slurm")),
    ],
)
def test_a_scheduler_parameter_marks_only_its_own_case(
    tmp_path: Path, scheduler: str, expected: tuple[set[str], str | None]
) -> None:
    module = load(tmp_path, "def test_run(scheduler): ...\n")
    assert marked(module, scheduler=scheduler) == {"test_run": expected}


def test_a_whole_run_on_a_cluster_is_grouped_with_the_cluster(tmp_path: Path) -> None:
    module = load(
        tmp_path,
        """
from tests.helpers.llamacpp import run_embedded

async def test_run(scheduler, tmp_path): await run_embedded("run", scheduler, cwd=tmp_path)
""",
    )
    assert marked(module, scheduler="ray") == {"test_run": ({"llamacpp", "ray", "slow"}, "ray")}


def test_a_module_about_one_outside_part_marks_every_test_in_it(tmp_path: Path) -> None:
    module = load(tmp_path, "def test_one(): ...\ndef test_two(): ...\n", "test_slurm_scheduler")
    assert marked(module) == {
        name: ({"slurm", "slow"}, "slurm") for name in ("test_one", "test_two")
    }


def test_conftest_marks_and_groups_a_test_that_measures_resident_memory(
    request: pytest.FixtureRequest,
) -> None:
    assert rss_mb(os.getpid()) > 0
    assert request.node.get_closest_marker("slow") is not None
    groups = [mark.args for mark in request.node.iter_markers("xdist_group")]
    assert groups == [("memory",)]
    if hasattr(request.config, "workerinput"):  # under -n: the id xdist schedules by
        assert request.node.nodeid.endswith("@memory")


def test_the_group_xdist_gives_a_test_is_in_the_id_pytest_reports(
    request: pytest.FixtureRequest,
) -> None:
    test = pytest.Function.from_parent(request.node.parent, name="test_probe", callobj=lambda: None)
    plain = test.nodeid
    carry_xdist_groups([test])
    assert test.nodeid == plain
    test._nodeid = f"{plain}@gsm8k"  # what xdist's worker writes, as of 3.8
    carry_xdist_groups([test])
    assert test.nodeid == f"{plain}@gsm8k"
