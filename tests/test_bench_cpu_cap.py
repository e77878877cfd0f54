"""The proxy benchmark's CPU cap: which cgroup controller it finds, and its refusal without one
(no root needed: each case builds a cgroup tree's marker files in a temporary folder)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.parts.cpu_cap import Controller, CpuCapError, find_controller


def test_without_a_cpu_controller_the_cap_is_refused_naming_what_is_missing(
    tmp_path: Path,
) -> None:
    (tmp_path / "cgroup.controllers").write_text("memory pids\n")
    with pytest.raises(CpuCapError) as refused:
        find_controller(tmp_path)
    message = str(refused.value)
    assert "needs root and a cgroup cpu controller" in message
    assert f"{tmp_path}/cpu/cpu.cfs_quota_us" in message
    assert "run without the cap" in message


def test_cgroup_v1_cpu_hierarchy_is_preferred(tmp_path: Path) -> None:
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    (tmp_path / "cgroup.controllers").write_text("cpu memory\n")
    assert find_controller(tmp_path) == Controller(tmp_path / "cpu", v2=False)


@pytest.mark.parametrize("where", ["unified", ""])
def test_cgroup_v2_with_cpu_is_found_hybrid_or_alone(tmp_path: Path, where: str) -> None:
    base = tmp_path / where
    base.mkdir(exist_ok=True)
    (base / "cgroup.controllers").write_text("cpuset cpu io memory\n")
    assert find_controller(tmp_path) == Controller(base, v2=True)


def test_quota_files_say_the_share_of_each_period(tmp_path: Path) -> None:
    Controller(tmp_path, v2=True).set_quota(tmp_path, 0.3)
    assert (tmp_path / "cpu.max").read_text() == "30000 100000"
    Controller(tmp_path, v2=False).set_quota(tmp_path, 2 * 0.3)
    assert (tmp_path / "cpu.cfs_quota_us").read_text() == "60000"
    assert (tmp_path / "cpu.cfs_period_us").read_text() == "100000"
