"""summary.json read through its model: files of this version and of before it, not newer ones."""

from __future__ import annotations

import json
from pathlib import Path

from agent_eval.metrics import summarize
from agent_eval.results.files import RunDirectory
from agent_eval.results.summary import SUMMARY_SCHEMA, read_summary, summary_json, write_summary
from tests.helpers.reports import record


def test_a_written_summary_reads_back_with_its_version(tmp_path: Path) -> None:
    summary = summarize([record("s0", 0, True).score(), record("s1", 0, False).score()], 2.0)
    path = write_summary(RunDirectory(tmp_path), summary)
    written = json.loads(path.read_text())
    assert written["schema_version"] == SUMMARY_SCHEMA
    read = read_summary(path)
    assert read is not None and summary_json(read) == written


def test_a_summary_written_before_the_version_still_reads(tmp_path: Path) -> None:
    summary = summarize([record("s0", 0, True).score()], 2.0)
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(summary.to_dict()))
    read = read_summary(path)
    assert read is not None and read.accuracy == summary.accuracy


def test_a_newer_or_broken_summary_reads_as_none(tmp_path: Path) -> None:
    summary = summarize([record("s0", 0, True).score()], 2.0)
    path = tmp_path / "summary.json"
    path.write_text(json.dumps({**summary_json(summary), "schema_version": SUMMARY_SCHEMA + 1}))
    assert read_summary(path) is None
    path.write_text("{")
    assert read_summary(path) is None
    assert read_summary(tmp_path / "absent.json") is None
