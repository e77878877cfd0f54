"""report.html on a command runner's run: how many attempts went wrong, and each shown with
its program (command, ending, check, tails, coloured diff) beside its tool calls and workers,
every byte of it escaped."""

from __future__ import annotations

import re
from html import escape
from pathlib import Path
from typing import Any

from agent_eval.report.programs import MAX_PROGRAMS
from agent_eval.results.record import AttemptRecord
from tests.helpers.program_records import HOSTILE, program, program_record
from tests.helpers.reports import Page, make_run, record, report


def ran(sample_id: str, correct: bool, **ended: Any) -> AttemptRecord:
    """An attempt of the command runner: its Anthropic tool loop on w0 and w1, its program."""
    attempt = record(sample_id, 0, correct)
    attempt.trajectory = program_record(sample_id, 0, **ended)["trajectory"]
    attempt.trajectory["program"] = program(**ended) | ({"check": None} if correct else {})
    return attempt


def test_the_attempts_that_went_wrong_show_their_programs(tmp_path: Path) -> None:
    records = [
        ran("q0", True, exit_code=0),
        ran("q1", False, exit_code=1),
        ran("q2", False, exit_code=None, signal="SIGKILL"),
        record("q3", 0, False),  # a runner without a program: not counted
    ]
    run = make_run(tmp_path / "run", records, n_samples=1, agent="command")
    assert report(run).exit_code == 0
    html = (run / "report.html").read_text()
    page = Page(html)
    text = " ".join(page.text)
    assert "Programs: 2 of 3 attempts went wrong" in text
    summaries = re.findall(r"<summary>(.*?)</summary>", html)
    assert summaries == [
        "q1#0: exit 1 · 2.50 s · wrong",
        "q2#0: killed by SIGKILL · 2.50 s · wrong",
    ]
    fields = re.search(r'<table class="program-fields">(.*?)</table>', html, re.S)
    assert fields is not None
    assert "<th>command</th><td>python agent.py --task {id}</td>" in fields[1]
    assert "<th>check</th><td>pytest -q · exit 1 · score 0.00</td>" in fields[1]
    assert "<th>workers</th><td>w0, w1</td>" in fields[1]
    assert "multiply({&quot;a&quot;: 16, &quot;b&quot;: 3}) -&gt; 48.0" in fields[1]
    assert (
        f'<span class="diff-add">{escape("+    return {!r}".format("hello, world"))}</span>' in html
    )
    assert f'<span class="diff-del">{escape("-    return {!r}".format("hi"))}</span>' in html
    assert '<span class="diff-hunk">@@ -1,2 +1,2 @@</span>' in html
    assert "ValueError: almost" in text and HOSTILE in text
    assert "script" not in page.tags and HOSTILE not in html


def test_a_run_without_programs_has_no_programs_section(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", [record("q0", 0, True)], n_samples=1)
    assert report(run).exit_code == 0
    assert 'id="programs"' not in (run / "report.html").read_text()


def test_only_the_first_that_went_wrong_are_shown(tmp_path: Path) -> None:
    records = [ran(f"q{i}", False) for i in range(MAX_PROGRAMS + 3)]
    run = make_run(tmp_path / "run", records, n_samples=1, agent="command")
    assert report(run).exit_code == 0
    html = (run / "report.html").read_text()
    assert html.count('<details class="program"') == MAX_PROGRAMS
    assert "and 3 more" in html
