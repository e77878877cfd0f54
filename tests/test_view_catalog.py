"""The catalog keeps a run as the report reads it until the run's files change."""

from __future__ import annotations

from pathlib import Path

from agent_eval.view.catalog import Catalog
from tests.helpers.view_runs import append, record, write_run


async def test_a_runs_report_is_kept_until_its_samples_change(tmp_path: Path) -> None:
    write_run(tmp_path / "runs" / "live", [record("s1", 0, True)], finished=False)
    catalog = Catalog([tmp_path / "runs"])
    run = await catalog.run("runs/live")
    assert run is not None
    first = await catalog.report(run)
    assert await catalog.report(run) is first
    append(run.path, [record("s2", 0, False)])
    again = await catalog.report(run)
    assert [score.sample_id for score in again.scores] == ["s1", "s2"]
    assert again.summary.accuracy.value == 0.5
