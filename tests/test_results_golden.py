"""A run's results stay what they were: samples.jsonl and summary.json field by field, for
deterministic runs of both agents, a perturbed one and a resumed one (timings masked)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.helpers.golden_runs import pinned_differences, play, read_pinned


@pytest.mark.slow
def test_the_results_of_pinned_runs_do_not_change(tmp_path: Path) -> None:
    play(tmp_path, [sys.executable, "-m", "agent_eval"])
    changed = pinned_differences(read_pinned(), tmp_path)
    assert not changed, (
        "these results changed; if meant, pin them again with "
        "`python -m tests.helpers.golden_runs OUT --update` and say why in the commit:\n"
        + "\n".join(changed[:40])
    )
