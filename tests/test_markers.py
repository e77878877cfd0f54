"""conftest marks each test by what it uses (tests/helpers/markers.py): small test modules are
collected here and their tests' markers and xdist groups read back."""

from __future__ import annotations

import os

import pytest

from tests.helpers.markers import group_of, markers_of
from tests.helpers.processes import rss_mb

pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True)
def settled(pytester: pytest.Pytester) -> None:
    """Inner runs with the project's pytest-asyncio settings, and no assertion rewriting:
    they only collect, and rewriting each module they import would take seconds."""
    pytester.makeini(
        "[pytest]\naddopts = --assert=plain\nasyncio_default_fixture_loop_scope = function\n"
    )


def marked(pytester: pytest.Pytester, source: str) -> dict[str, tuple[set[str], str | None]]:
    """Each test of a module of `source`: the markers it would carry and its xdist group."""
    found = {}
    for item in pytester.getitems(source):
        assert isinstance(item, pytest.Function)
        markers = markers_of(item)
        found[item.name] = (markers, group_of(item, markers))
    return found


def test_a_test_using_the_browser_or_the_terminal_is_marked_so(pytester: pytest.Pytester) -> None:
    found = marked(
        pytester,
        """
from tests.helpers.view_runs import cells

async def test_by_fixture(browser): ...
async def test_by_helper(page): await cells(page, "table")
async def test_on_a_terminal(on_terminal): ...
def test_plain(tmp_path): ...
""",
    )
    assert found == {
        "test_by_fixture": ({"browser", "slow"}, None),
        "test_by_helper": (set(), None),  # view_runs serves pages; the fixture brings the browser
        "test_on_a_terminal": ({"tmux", "slow"}, None),
        "test_plain": (set(), None),
    }


def test_a_test_starting_agent_eval_in_a_process_of_its_own_is_slow(
    pytester: pytest.Pytester,
) -> None:
    found = marked(
        pytester,
        """
from tests.helpers.cli_runs import agent_eval, finish, lines

async def test_in_a_process(tmp_path): await finish(await agent_eval("run", cwd=tmp_path))
def test_reading_what_it_wrote(tmp_path): assert lines(tmp_path) == []
""",
    )
    assert found == {
        "test_in_a_process": ({"slow"}, None),
        "test_reading_what_it_wrote": (set(), None),
    }


def test_processes_of_its_own_and_property_tests_are_slow(pytester: pytest.Pytester) -> None:
    found = marked(
        pytester,
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
    assert found == {name: ({"slow"}, None) for name in found} and len(found) == 3


def test_a_test_reaching_llamacpp_through_its_own_functions_is_slow_and_grouped(
    pytester: pytest.Pytester,
) -> None:
    found = marked(
        pytester,
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
    assert found == {
        "test_directly": llamacpp,
        "test_through_a_function": llamacpp,
        "test_through_a_fixture": llamacpp,
    }


def test_a_scheduler_parameter_marks_only_its_own_case(pytester: pytest.Pytester) -> None:
    found = marked(
        pytester,
        """
import pytest

@pytest.mark.parametrize("scheduler", ["local", "ray", "slurm"])
def test_run(scheduler): ...
""",
    )
    assert found == {
        "test_run[local]": (set(), None),
        "test_run[ray]": ({"ray", "slow"}, "ray"),
        "test_run[slurm]": ({"slurm", "slow"}, "slurm"),
    }


def test_a_module_about_one_outside_part_marks_every_test_in_it(
    pytester: pytest.Pytester,
) -> None:
    path = pytester.makepyfile(test_slurm_scheduler="def test_one(): ...\ndef test_two(): ...")
    items, _ = pytester.inline_genitems(path)
    assert [markers_of(item) for item in items] == [{"slurm", "slow"}] * 2


def test_conftest_marks_and_groups_a_test_that_measures_resident_memory(
    request: pytest.FixtureRequest,
) -> None:
    assert rss_mb(os.getpid()) > 0
    assert request.node.get_closest_marker("slow") is not None
    groups = [mark.args for mark in request.node.iter_markers("xdist_group")]
    assert groups == [("memory",)]
