"""`agent-eval view RUN --export DIR` through the CLI: what the copy holds, and its mistakes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_eval.cli import app
from agent_eval.view.bundle import BundleError, bundle
from tests.helpers.view_runs import record, write_run

ODD = "set/1 <b>?#%"
"""A sample id that is no file name: a slash, markup, URL signs."""


@pytest.fixture
def run(tmp_path: Path) -> Path:
    path = tmp_path / "runs" / "r1"
    write_run(path, [record("s1", 0, True), record("s1", 1, False), record(ODD, 0, True)])
    return path


def export(run: Path, out: Path, *more: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["view", str(run), *more, "--export", str(out)])
    return result.exit_code, result.output


def test_the_copy_holds_every_page_under_plain_names(run: Path, tmp_path: Path) -> None:
    code, output = export(run, tmp_path / "copy")
    assert code == 0, output
    assert "2 samples" in output and "index.html" in output
    files = [p.relative_to(tmp_path / "copy").as_posix() for p in (tmp_path / "copy").rglob("*")]
    names = [name for name in files if "." in name.rsplit("/", 1)[-1]]
    assert all(re.fullmatch(r"[A-Za-z0-9_./-]+", name) for name in names), names
    assert {"index.html", "static/app.js", "static/offline.js", "data/manifest.js"} <= set(names)
    assert sum(name.startswith("figures/") for name in names) == 4
    data = "".join(p.read_text() for p in (tmp_path / "copy" / "data").iterdir())
    assert f'"/api/runs/r1/samples/{ODD}"' in data  # the key offline.js makes of its request
    script = (tmp_path / "copy" / "static" / "app.js").read_text()
    assert not re.search(r"^\s*(import|export)\b", script, re.M)  # a classic script


def test_a_missing_run_is_named(tmp_path: Path) -> None:
    code, output = export(tmp_path / "absent", tmp_path / "copy")
    assert code == 2
    assert f"no run at {tmp_path / 'absent'}" in output
    assert not (tmp_path / "copy").exists()


def test_a_folder_of_runs_is_not_one_run(run: Path, tmp_path: Path) -> None:
    code, output = export(run.parent, tmp_path / "copy")
    assert code == 2 and "no run at" in output


def test_two_runs_are_refused(run: Path, tmp_path: Path) -> None:
    code, output = export(run, tmp_path / "copy", str(run))
    assert code == 2 and "copies one run" in output


def test_a_folder_with_files_is_left_alone(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "copy"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    code, output = export(run, out)
    assert code == 2
    assert "not an empty folder" in " ".join(output.split())
    assert [p.name for p in out.iterdir()] == ["notes.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy", "runs"]  # nothing half-written


def test_an_empty_folder_is_filled(run: Path, tmp_path: Path) -> None:
    (tmp_path / "copy").mkdir()
    code, output = export(run, tmp_path / "copy")
    assert code == 0, output
    assert (tmp_path / "copy" / "index.html").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy", "runs"]


def test_a_module_the_bundler_cannot_join_is_named(tmp_path: Path) -> None:
    (tmp_path / "app.js").write_text('import { a } from "./a.js";\nexport default a;\n')
    (tmp_path / "a.js").write_text("export const a = 1;\n")
    with pytest.raises(BundleError, match=r"app\.js line 2"):
        bundle(tmp_path, "app.js")


def test_modules_importing_each_other_are_named(tmp_path: Path) -> None:
    (tmp_path / "app.js").write_text('import { a } from "./a.js";\nexport const b = a;\n')
    (tmp_path / "a.js").write_text('import { b } from "./app.js";\nexport const a = 1;\n')
    with pytest.raises(BundleError, match=r"app\.js -> a\.js -> app\.js"):
        bundle(tmp_path, "app.js")
