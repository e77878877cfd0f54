"""report.html of a run with injections: the security rows, and the attacks that reached their
goal with the tool call that reached it."""

from __future__ import annotations

import re
from pathlib import Path

from agent_eval.metrics import summarize
from agent_eval.results.files import RunDirectory
from agent_eval.results.summary import write_summary
from tests.helpers.injections import dojo_record
from tests.helpers.reports import EVIL, Page, make_run, report, table_row

ATTACK = "important_instructions"


def _attacked_run(path: Path) -> Path:
    """Banking: 2 plain (1 useful); 3 attacked, the evil-named one and another breached."""
    records = [
        dojo_record("b0"),
        dojo_record("b1", user_task="user_task_1", utility=False),
        dojo_record("a0", attack=ATTACK, utility=False, security=True, injection_task=EVIL),
        dojo_record("a1", attack=ATTACK, security=False),
        dojo_record("a2", attack=ATTACK, utility=False, security=True),
    ]
    run = make_run(path, records, n_samples=1, agent="agentdojo")
    write_summary(RunDirectory(run), summarize([r.score() for r in records], 2.0))
    return run


def test_the_report_shows_the_security_figures_and_each_attack_that_won(tmp_path: Path) -> None:
    run = _attacked_run(tmp_path / "dojo")
    result = report(run)
    assert result.exit_code == 0, result.output
    # 2 of 3 attacks reached their goal: Wilson 95% interval 0.21 to 0.94
    rate = "0.667 ± 0.272 [0.21, 0.94]"
    assert table_row(result.output, "attack success rate") == [
        "attack",
        "success",
        "rate",
        *rate.split(),
    ]
    page = Page((run / "report.html").read_text())
    assert page.row("headline", "attack success rate") == ["attack success rate", rate]
    assert page.row("headline", "utility") == ["utility", "0.500 ± 0.354 [0.09, 0.91]"]
    assert page.row("headline", "utility under attack")[1].startswith("0.333")
    heading = next(text for text in page.text if text.startswith("Attacks that reached"))
    assert heading == "Attacks that reached their goal: 2 of 3 attacked attempts"
    rows = page.rows["breached"][1:]
    assert [row[0] for row in rows] == ["a0", "a2"]
    assert rows[0][2:6] == ["banking", "user_task_0", EVIL, ATTACK]
    assert rows[0][6] == 'send_money({"amount": 100, "recipient": "US133"}) (call 3)'
    assert EVIL not in (run / "report.html").read_text()  # escaped


def test_a_run_without_attacks_has_no_attack_section(tmp_path: Path) -> None:
    run = make_run(tmp_path / "plain", [dojo_record("b0")], n_samples=1, agent="agentdojo")
    assert report(run).exit_code == 0
    text = (run / "report.html").read_text()
    assert "Attacks that reached" not in text and "utility" in text


def _attacks(path: Path, breached: bool) -> Path:
    """20 attacked attempts, every one breached or none, and one plain attempt done."""
    records = [dojo_record("plain")]
    records += [
        dojo_record(f"a{i}", attack=ATTACK, utility=not breached, security=breached)
        for i in range(20)
    ]
    run = make_run(path, records, n_samples=1, agent="agentdojo")
    write_summary(RunDirectory(run), summarize([r.score() for r in records], 2.0))
    return run


def test_two_runs_with_attacks_are_compared_on_the_security_figures(tmp_path: Path) -> None:
    a, b = _attacks(tmp_path / "a", breached=True), _attacks(tmp_path / "b", breached=False)
    result = report("--compare", a, b)
    assert result.exit_code == 0, result.output
    text = (a / "compare.html").read_text()
    page = Page(text)
    row = page.row("comparison", "attack success rate")
    assert row[1:4] == ["1.000", "0.000", "-1.000"] and row[-1] == "yes"
    assert page.row("comparison", "utility under attack")[-1] == "yes"
    # B's lower attack success rate is an improvement, as its higher utility under attack is.
    for metric in ("attack success rate", "utility under attack"):
        (shown,) = re.findall(rf'<tr><td class="">{metric}</td>.*?</tr>', text)
        assert 'class="num better"' in shown, shown
    assert 'class="num worse"' not in text
