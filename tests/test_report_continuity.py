"""The report of a run whose model calls have tokens: the continuity rows in the table and in
report.html, and the attempts whose turns drift."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.reports import Page, make_run, report, table_row
from tests.helpers.token_calls import conversation, record_with_tokens


def test_the_report_shows_the_drift_and_the_attempts_that_drift(tmp_path: Path) -> None:
    records = [
        record_with_tokens("a", 0, list(conversation(3, drift_at=1))),
        record_with_tokens("a", 1, list(conversation(3))),
        record_with_tokens("b", 0, list(conversation(4, drift_at=2))),
        record_with_tokens("b", 1, [None, None]),
    ]
    run = make_run(tmp_path / "tokens", records, n_samples=2)
    result = report(run)
    assert result.exit_code == 0, result.output
    # 2 of the 7 turns checked drift: Wilson 95% interval 0.08 to 0.64
    rate = "0.286 ± 0.171 [0.08, 0.64] over 7 turns checked"
    assert table_row(result.output, "drift rate")[2:7] == rate.split()[:5]
    assert table_row(result.output, "model calls without tokens")[-1] == "2"
    page = Page((run / "report.html").read_text())
    assert page.row("headline", "drift rate") == ["drift rate", rate]
    assert page.row("headline", "attempts with drift")[1].startswith("0.667 ± 0.272 [0.21, 0.94]")
    heading = next(text for text in page.text if text.startswith("Attempts whose turns drift"))
    assert heading == "Attempts whose turns drift: 2 of 3 attempts checked"
    assert page.rows["drifted"][1:] == [["a", "0", "1", "2"], ["b", "0", "1", "3"]]


def test_two_runs_with_tokens_are_compared_on_their_drift_rate(tmp_path: Path) -> None:
    drifting = [record_with_tokens(f"q{i}", 0, conversation(3, drift_at=1)) for i in range(20)]
    steady = [record_with_tokens(f"q{i}", 0, conversation(3)) for i in range(20)]
    a = make_run(tmp_path / "a", drifting, n_samples=1)
    b = make_run(tmp_path / "b", steady, n_samples=1)
    result = report("--compare", a, b)
    assert result.exit_code == 0, result.output
    row = Page((a / "compare.html").read_text()).row("comparison", "drift rate")
    # 20 of 40 turns drift in A, none in B: lower is better, and B's is lower beyond the noise.
    assert row[1:4] == ["0.500", "0.000", "-0.500"] and row[-1] == "yes"
    assert 'class="num better"' in (a / "compare.html").read_text()


def test_a_run_without_tokens_has_no_continuity(tmp_path: Path) -> None:
    run = make_run(tmp_path / "plain", [record_with_tokens("a", 0, [None])], n_samples=1)
    result = report(run)
    assert result.exit_code == 0, result.output
    assert "drift" not in result.output
    assert "drift" not in (run / "report.html").read_text()
