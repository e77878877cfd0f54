"""The report of a run with perturbed variants: its robustness rows, plot and broken samples."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from agent_eval.report.paired import paired_comparison
from agent_eval.report.runs import load_run
from agent_eval.results.record import AttemptRecord
from tests.helpers.reports import EVIL, Page, make_run, record, report, table_row

QUESTIONS = {
    "g1": "Tom has 3 apples.",
    "g1~numbers": "Tom has 7 apples.",
    "g2": "Ann reads 5 pages.",
    "g2~numbers": f"Ann reads {EVIL} pages.",
    "g3": "Bo runs 2 km.",
}
OUTCOMES = {
    "g1": (True, True),
    "g1~numbers": (True, False),
    "g2": (True, False),
    "g2~numbers": (False, False),
    "g3": (False, False),
}
"""numbers: 1 of 4 right, broken at g1#1 and g2#0, none fixed; g3 has no variant."""


def asked(
    sample_id: str, attempt: int, correct: bool, question: str, **fields: str
) -> AttemptRecord:
    """An attempt whose trajectory opens with the system prompt, then the question."""
    original, _, kind = sample_id.partition("~")
    messages = [{"role": "system", "content": "Solve it."}, {"role": "user", "content": question}]
    return replace(
        record(sample_id, attempt, correct, **fields),
        variant_of=original if kind else None,
        perturbation=kind or None,
        trajectory={"messages": messages},
    )


def perturbed_run(path: Path) -> Path:
    records = [
        asked(sample_id, attempt, correct, QUESTIONS[sample_id], answer="42" if correct else EVIL)
        for sample_id, pair in OUTCOMES.items()
        for attempt, correct in enumerate(pair)
    ]
    return make_run(path, records, n_samples=2)


def test_the_table_shows_accuracy_and_drop_by_kind(tmp_path: Path) -> None:
    run = perturbed_run(tmp_path / "run")
    result = report(run)
    assert result.exit_code == 0, result.output
    output = result.output
    # Originals 3 of 6; numbers 1 of 4; drop 3/4 - 1/4 over the 4 pairs, p = 2 / 2**2.
    assert table_row(output, "accuracy on originals")[3] == "0.500"
    assert table_row(output, "accuracy on numbers")[3] == "0.250"
    assert table_row(output, "drop on numbers")[3:] == ["+0.500", "[+0.50,", "+0.50]", "p=0.5"]
    assert table_row(output, "numbers broke / fixed")[4:] == ["2", "/", "0", "of", "4"]
    assert table_row(output, "numbers variants")[2:] == ["2", "(1", "originals", "without", "one)"]
    assert table_row(output, "robust accuracy")[2] == "0.250"  # only g1#0 holds on both
    sections = [line.strip() for line in output.splitlines()]
    assert sections.index("Stability") < sections.index("Robustness") < sections.index("Efficiency")


def test_the_page_plots_each_kind_and_sets_broken_samples_side_by_side(tmp_path: Path) -> None:
    run = perturbed_run(tmp_path / "run")
    assert report(run).exit_code == 0
    html = (run / "report.html").read_text()
    page = Page(html)
    assert "svg" in page.figures["robustness"]
    labels = "".join(page.figure_text["robustness"])
    assert labels.index("originals") < labels.index("numbers")
    assert "numbers: drop +0.500" in labels
    assert page.row("headline", "accuracy on numbers")[1].startswith("0.250")
    assert page.rows["broken"][1:] == [
        ["1", "g1", QUESTIONS["g1"], "42", "g1~numbers", QUESTIONS["g1~numbers"], EVIL],
        ["0", "g2", QUESTIONS["g2"], "42", "g2~numbers", QUESTIONS["g2~numbers"], EVIL],
    ]
    heading = "Broken by a perturbation: 2 attempts right on the original and wrong on its variant"
    assert heading in page.text
    assert EVIL not in html  # the hostile answer and question are escaped, not markup


def test_never_solved_counts_originals_as_the_headline_does_and_variants_apart(
    tmp_path: Path,
) -> None:
    run = perturbed_run(tmp_path / "run")
    stopped = asked("g4", 0, False, "Cy has 4 pens.", answer="")
    stopped = replace(stopped, error={"kind": "timeout", "message": "no answer in time"})
    (run / "samples.jsonl").write_bytes((run / "samples.jsonl").read_bytes() + stopped.to_line())
    assert report(run).exit_code == 0
    page = Page((run / "report.html").read_text())
    assert "samples 3 · attempts 11" in " ".join(page.text)  # g4 has no scored attempt
    # g3 of the 3 originals and g2~numbers of the 2 variants; g4 never scored, listed all the same.
    heading = "Samples never solved: 1 of 3 originals (1 more never scored); 1 of 2 variants"
    assert heading in page.text
    assert [row[0] for row in page.rows["never-solved"][1:]] == ["g2~numbers", "g3", "g4"]
    accuracy = " ".join(page.figure_text["accuracy"])
    assert "Accuracy over 6 scored attempts at the original samples" in accuracy


def test_a_kind_without_pairs_has_no_drop_in_the_caption(tmp_path: Path) -> None:
    # The variant's only attempt is #1, the original's #0: no attempt to pair.
    records = [asked("q1", 0, True, "q", answer="42"), asked("q1~names", 1, False, "q")]
    run = make_run(tmp_path / "run", records, n_samples=2)
    assert report(run).exit_code == 0
    caption = " ".join(Page((run / "report.html").read_text()).figure_text["robustness"])
    assert caption.rstrip().endswith("over samples.") and ". ." not in caption


def test_at_most_fifty_broken_attempts_are_listed_with_their_count(tmp_path: Path) -> None:
    records = [
        asked(sample_id, 0, not sample_id.endswith("~names"), f"question {sample_id}")
        for i in range(60)
        for sample_id in (f"q{i}", f"q{i}~names")
    ]
    run = make_run(tmp_path / "run", records, n_samples=1)
    assert report(run).exit_code == 0
    page = Page((run / "report.html").read_text())
    rows = page.rows["broken"]
    assert "the first 50" in page.text and len(rows) == 1 + 50
    assert [row[1] for row in rows[1:4]] == ["q0", "q1", "q2"]  # in the samples' natural order
    assert rows[-1][1:3] == ["q49", "question q49"]
    assert any(text.startswith("Broken by a perturbation: 60 attempts") for text in page.text)


def test_a_run_without_variants_has_no_robustness_plot_or_broken_samples(tmp_path: Path) -> None:
    records = [asked("q1", 0, True, "q"), asked("q2", 0, False, "q")]
    run = make_run(tmp_path / "run", records, n_samples=1)
    result = report(run)
    assert result.exit_code == 0
    page = Page((run / "report.html").read_text())
    assert "robustness" not in page.figures and "broken" not in page.rows
    assert "Robustness" not in result.output and "accuracy on originals" not in result.output


def test_two_perturbed_runs_are_paired_on_their_originals_as_quality_counts(
    tmp_path: Path,
) -> None:
    a = load_run(perturbed_run(tmp_path / "a"))
    flipped = {sample_id: (not x, not y) for sample_id, (x, y) in OUTCOMES.items()}
    records = [
        asked(sample_id, attempt, correct, QUESTIONS[sample_id])
        for sample_id, pair in flipped.items()
        for attempt, correct in enumerate(pair)
    ]
    b = load_run(make_run(tmp_path / "b", records, n_samples=2))
    comparison = paired_comparison(a, b)
    assert len(comparison.pairing.pairs) == 6 and comparison.pairing.unmatched == 0
    assert comparison.pairing.a_only == [("g1", 0), ("g1", 1), ("g2", 0)]
    accuracy = comparison.rows[0]
    assert (accuracy.a, accuracy.b) == (a.summary.accuracy.value, b.summary.accuracy.value)
