"""The benchmarks: each runs one way, `python -m bench.NAME [--json [PATH]]`, and writes its
figures as JSON; every stored result names its bench and how it was made, and the docs link
each one."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
RESULTS = BENCH / "results"
DOC = ROOT / "docs" / "benchmarks.md"
BENCH_README = BENCH / "README.md"
NAMES = sorted(path.stem for path in BENCH.glob("*.py") if path.stem != "__init__")
STORED = sorted(RESULTS.glob("*.json"))
ENVELOPE = ("bench", "command", "settings", "figures")


@pytest.mark.parametrize("name", NAMES)
def test_every_bench_runs_as_a_module_and_takes_json(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module = importlib.import_module(f"bench.{name}")
    monkeypatch.setattr(sys, "argv", [f"bench.{name}", "--help"])
    with pytest.raises(SystemExit) as stopped:
        module.main()
    assert stopped.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--json [PATH]" in text
    assert f"bench/results/{name}.json" in text


def test_a_bench_writes_its_figures_and_how_they_were_made(tmp_path: Path) -> None:
    out = tmp_path / "adaptive.json"
    argv = [sys.executable, "-m", "bench.adaptive", "--runs", "1", "--json", str(out)]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    stored = json.loads(out.read_text())
    assert stored["bench"] == "adaptive"
    assert stored["command"] == f"python -m bench.adaptive --runs 1 --json {out}"
    assert stored["settings"] == {
        "seed": 100, "runs": 1, "spread": 2.5, "scenario": None, "jobs": 1,
    }  # fmt: skip
    assert stored["machine"]["cores"] >= 1
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", stored["measured_at"])
    scenarios = stored["figures"]["scenarios"]
    assert list(scenarios) == [
        "steady climb", "early plateau", "late collapse", "noisy", "step change",
    ]  # fmt: skip
    schedules = [row["schedule"] for row in scenarios["step change"]]
    assert schedules == [
        "every 50 steps", "every 100 steps", "every 200 steps", "today's trigger",
        "bounded trigger",
    ]  # fmt: skip
    assert f"figures written to {out}" in done.stdout


def test_stored_results_exist_for_the_published_figures() -> None:
    assert STORED, "bench/results/ holds no stored result"


@pytest.mark.parametrize("path", STORED, ids=[path.name for path in STORED])
def test_a_stored_result_names_its_bench_and_its_origin(path: Path) -> None:
    stored = json.loads(path.read_text())
    assert all(key in stored for key in ENVELOPE), f"{path.name} lacks {ENVELOPE}"
    assert stored["bench"] in NAMES
    assert stored["command"].startswith(f"python -m bench.{stored['bench']}")
    assert stored["figures"]
    measured, transcribed = "measured_at" in stored, "transcribed" in stored
    assert measured != transcribed, f"{path.name}: measured or transcribed, exactly one"
    if transcribed:
        assert {"from", "measured_on", "note"} <= set(stored["transcribed"])
    else:
        assert stored["machine"]["cores"] >= 1


def test_the_docs_link_every_stored_result_and_nothing_else() -> None:
    linked = set(re.findall(r"bench/results/([\w.-]+\.json)", DOC.read_text()))
    assert linked == {path.name for path in STORED}


@pytest.mark.parametrize("doc", [DOC, BENCH_README], ids=["docs", "bench-readme"])
def test_every_command_the_docs_give_runs_a_bench(doc: Path) -> None:
    text = doc.read_text()
    commands = set(re.findall(r"python -m bench\.([a-z_]+)", text))  # NAME: a placeholder
    assert commands and commands <= set(NAMES)
    assert "python bench/" not in text


def test_bench_readme_describes_every_bench() -> None:
    text = BENCH_README.read_text()
    missing = [name for name in NAMES if f"python -m bench.{name}" not in text]
    assert not missing
