"""`agent-eval report`: the summary again, an offline HTML page with every plot, run comparison."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_eval.metrics import summarize
from agent_eval.report.runs import load_run
from agent_eval.results.files import WORKERS, RunDirectory, save_worker_snapshot
from agent_eval.results.record import SCHEMA
from agent_eval.results.summary import write_summary
from tests.helpers.reports import (
    EVIL,
    Page,
    binary_run,
    make_run,
    record,
    report,
    runs_of_one_agent,
    table_row,
)

SINGLE_FIGURES = ("accuracy", "latency", "prompt-tokens", "completion-tokens", "workers")
WORKER_SNAPSHOT = [
    {"url": "http://127.0.0.1:30001", "healthy": True, "breaker": "closed", "served": 6},
    {"url": "http://127.0.0.1:30002", "healthy": False, "breaker": "open", "served": 2},
]


@pytest.fixture
def single(tmp_path: Path) -> Path:
    """4 samples x 2 attempts, 4 of 8 correct; the evil sample is never solved."""
    outcomes = {"s0": (True, True), "s1": (True, False), EVIL: (False, False), "s3": (True, False)}
    records = [
        record(sample_id, attempt, correct)
        for sample_id, pair in outcomes.items()
        for attempt, correct in enumerate(pair)
    ]
    run = make_run(tmp_path / "single", records, n_samples=2)
    # As the engine writes it: its rates measured over every attempt, played in 4 s.
    write_summary(RunDirectory(run), summarize([r.score() for r in records], 4.0, (1, 2)))
    save_worker_snapshot(run, WORKER_SNAPSHOT)
    return run


@pytest.fixture
def multi(tmp_path: Path) -> Path:
    """3 sessions of 3 turns; one gets every turn right."""
    turns = {"s0": [1.0, 1.0, 1.0], EVIL: [1.0, 0.0, 1.0], "s2": [0.0, 0.0, 0.5]}
    records = [
        record(sample_id, 0, all(r == 1.0 for r in rewards), turn_rewards=rewards)
        for sample_id, rewards in turns.items()
    ]
    return make_run(tmp_path / "multi", records, n_samples=1, agent="multi_turn_chat")


def test_a_single_run_prints_its_summary_and_writes_every_plot(single: Path) -> None:
    result = report(single)
    assert result.exit_code == 0, result.output
    # 4 of 8: stderr sqrt(0.5 * 0.5 / 8) = 0.177, Wilson 95% interval 0.22 to 0.78
    accuracy = "0.500 ± 0.177 [0.22, 0.78]"
    assert table_row(result.output, "accuracy") == ["accuracy", *accuracy.split()]
    assert table_row(result.output, "pass@2") == ["pass@2", "0.750"]
    target = single / "report.html"
    assert f"Report: {target}" in result.output
    assert target.resolve().as_uri() in result.output
    page = Page(target.read_text())
    for figure in SINGLE_FIGURES:
        assert "svg" in page.figures[figure], figure
        assert "figcaption" in page.figures[figure], figure
    assert "turn-rewards" not in page.figures
    assert page.row("headline", "accuracy") == ["accuracy", accuracy]
    # 200 completion and 800 prompt tokens in 4 s
    assert page.row("headline", "completion tokens/s") == ["completion tokens/s", "50.0"]
    assert page.row("headline", "prompt tokens/s") == ["prompt tokens/s", "200.0"]
    assert page.row("config", "attempts per sample") == ["attempts per sample", "2"]
    assert "127.0.0.1:30001" in "".join(page.figure_text["workers"])


def test_maj_at_1_is_pass_at_1_and_a_tie_counts_one_over_the_answers_tied(single: Path) -> None:
    result = report(single)
    assert result.exit_code == 0, result.output
    # A sample's attempts: s0 42 42, s1 42 41, evil 41 41, s3 42 41 (42 is right). A single
    # attempt's majority is that attempt, over both attempts as pass@1 counts them; s1 and s3
    # tie 1-1 at maj@2, each tie half right.
    assert table_row(result.output, "maj@1") == ["maj@1", "0.500"]
    assert table_row(result.output, "pass@1") == ["pass@1", "0.500"]
    assert table_row(result.output, "maj@2") == ["maj@2", "0.500"]
    assert "a tie of t answers counts 1/t" in " ".join(result.output.split())


def test_prompt_and_completion_tokens_are_plotted_apart_as_captioned(single: Path) -> None:
    assert report(single).exit_code == 0
    page = Page((single / "report.html").read_text())
    # Every attempt's prompt is 100 tokens; its completion 20 at attempt 0, 30 at attempt 1.
    for name, caption in [
        ("prompt-tokens", "Prompt tokens per attempt: mean 100"),
        ("completion-tokens", "Completion tokens per attempt: mean 25"),
    ]:
        text = " ".join(page.figure_text[name])
        assert "svg" in page.figures[name] and caption in text, name
        assert f"{name.replace('-', ' ')} per attempt" in text  # the histogram's own axis
    assert "tokens" not in page.figures


def test_a_multi_turn_run_gets_a_session_by_turn_heatmap(multi: Path) -> None:
    result = report(multi)
    assert result.exit_code == 0, result.output
    page = Page((multi / "report.html").read_text())
    assert "svg" in page.figures["turn-rewards"]
    labels = "".join(page.figure_text["turn-rewards"])
    assert "s0-0" in labels and "s2-0" in labels
    # one cell per session and turn, each with its reward as a tooltip
    assert page.figures["turn-rewards"].count("title") >= 9
    assert page.row("headline", "session success") == ["session success", "0.333"]
    # A session is right only when every turn is: the headline says so, printed and on the page.
    label = "accuracy (every turn right)"
    assert table_row(result.output, label)[4] == "0.333", result.output
    assert page.row("headline", label)[1].startswith("0.333 ±")


def test_an_unscored_session_is_a_row_without_rewards_in_the_heatmap(multi: Path) -> None:
    down = {"kind": "upstream_error", "class": "infra", "message": "502 after retries"}
    stopped = record("s3", 0, False, turn_rewards=[1.0, 0.0, 0.0], error=down)
    # As schema 1 wrote it: the turns the outage kept from the model scored 0, the attempt wrong.
    old = json.loads(stopped.to_line()) | {"schema": 1, "reward": 1 / 3, "correct": False}
    old |= {"sample_id": "s4", "session_id": "s4-0", "turn_rewards": [1.0, 0.0, 0.0]}
    with (multi / "samples.jsonl").open("ab") as samples:
        samples.write(stopped.to_line() + json.dumps(old).encode() + b"\n")
    result = report(multi)
    assert result.exit_code == 0, result.output
    page = Page((multi / "report.html").read_text())
    tips = "".join(page.figure_text["turn-rewards"])
    for session in ("s3-0", "s4-0"):
        assert all(f"{session}, turn {turn}: n/a" in tips for turn in (1, 2, 3)), tips
    assert page.row("headline", "session success") == ["session success", "0.333"]


def test_the_page_needs_no_network_and_escapes_what_runs_hold(single: Path, multi: Path) -> None:
    for run in (single, multi):
        assert report(run).exit_code == 0
        html = (run / "report.html").read_text()
        page = Page(html)
        assert not {"script", "link", "img", "iframe", "object"} & page.tags
        assert all(not ref.startswith(("http:", "https:", "//")) for ref in page.references)
        assert "@import" not in html and "url(" not in html
        assert EVIL not in html
        assert EVIL in "".join(page.text)  # escaped, so shown as text rather than dropped


def test_without_workers_json_the_report_says_so(single: Path) -> None:
    (single / WORKERS).unlink()
    assert report(single).exit_code == 0
    page = Page((single / "report.html").read_text())
    assert "svg" not in page.figures["workers"]
    assert "no worker data" in "".join(page.figure_text["workers"])


def test_a_worker_snapshot_round_trips(tmp_path: Path, single: Path) -> None:
    assert not list(single.glob("*.partial"))  # written atomically, nothing left over
    loaded = load_run(single).workers
    assert loaded is not None
    assert [(w.served, w.healthy, w.breaker) for w in loaded] == [
        (6, True, "closed"),
        (2, False, "open"),
    ]


def test_a_clear_difference_exceeds_the_noise(tmp_path: Path) -> None:
    a = binary_run(tmp_path / "a", correct=180, total=200)
    b = binary_run(tmp_path / "b", correct=100, total=200)
    out = tmp_path / "compare.html"
    result = report("--compare", a, b, "--out", out)
    assert result.exit_code == 0, result.output
    row = table_row(result.output, "accuracy")
    assert row[1:4] == ["0.900", "0.500", "-0.400"]
    assert row[-1] == "yes"
    assert table_row(result.output, "latency")[-1] == "no"  # the same latencies in both
    page = Page(out.read_text())
    assert page.row("comparison", "accuracy")[-1] == "yes"
    for figure in ("compare-quality", *(f"{run}-{f}" for run in "ab" for f in SINGLE_FIGURES)):
        assert figure in page.figures, figure


def test_a_small_difference_does_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = binary_run(tmp_path / "a", correct=25, total=50)
    b = binary_run(tmp_path / "b", correct=26, total=50)
    monkeypatch.chdir(tmp_path)
    result = report("--compare", a, b)
    assert result.exit_code == 0, result.output
    row = table_row(result.output, "accuracy")
    assert row[1:4] == ["0.500", "0.520", "+0.020"]
    assert row[-1] == "no"
    assert table_row(result.output, "pass@1")[-1] == "no"
    assert (a / "compare.html").is_file()  # the default: A's run directory
    assert not (tmp_path / "compare.html").exists()  # never the current directory unasked


def test_an_unfinished_run_is_reported_with_notes(tmp_path: Path) -> None:
    records = [record("s0", 0, True), record("s0", 1, False), record("s1", 0, True)]
    run = make_run(tmp_path / "run", records, n_samples=2)
    with (run / "samples.jsonl").open("a") as handle:
        handle.write('{"sample_id": "s1", "att')  # a crash mid-write
    result = report(run)
    assert result.exit_code == 0, result.output
    assert "line 4 was cut off" in result.output
    assert "k = 2 left out" in result.output  # s1 has one attempt only
    assert "no summary.json" in result.output


def bad_line(path: Path, line: str) -> None:
    """A run directory whose samples.jsonl starts with `line`, not written by the engine."""
    (make_run(path, [], 1) / "samples.jsonl").write_text(line + "\n{}\n")


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda p: p.mkdir(), "not a run directory"),
        (lambda p: make_run(p, [], 1), "holds no attempts yet"),
        (lambda p: bad_line(p, '{"sample_id": "s0"}'), "line 1 is not an attempt record"),
        (lambda p: bad_line(p, "{oops"), "line 1 is not valid JSON"),
        (
            lambda p: bad_line(p, f'{{"schema": {SCHEMA + 1}, "sample_id": "s0"}}'),
            f"has record schema {SCHEMA + 1}",
        ),
    ],
)
def test_a_bad_run_directory_ends_in_one_message(tmp_path: Path, setup: Any, message: str) -> None:
    setup(tmp_path / "run")
    result = report(tmp_path / "run")
    assert result.exit_code == 2
    assert message in " ".join(result.stderr.split())
    assert "Traceback" not in result.output


def test_a_glob_of_runs_reports_the_latest_and_compares_nothing(tmp_path: Path) -> None:
    paths = runs_of_one_agent(tmp_path / "runs", 3)
    latest = paths[-1]
    # the latest is named in the middle, as no shell orders by time
    result = report(paths[0], latest, paths[1])
    assert result.exit_code == 0, result.output
    assert "3 runs named: reporting the latest" in " ".join(result.output.split())
    assert table_row(result.output, "accuracy")[1] == "0.400"  # the latest run's: 2 of 5
    assert [p for p in paths if (p / "report.html").exists()] == [latest]
    assert not list(tmp_path.rglob("compare.html"))


def test_without_a_run_named_the_latest_under_runs_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = runs_of_one_agent(tmp_path / "runs", 2)
    (tmp_path / "runs" / "workers-20261201-000000").mkdir()  # `workers up` logs: not a run
    (paths[0] / "report.html").write_text("")  # an old report makes no run the latest
    monkeypatch.chdir(tmp_path)
    result = report()
    assert result.exit_code == 0, result.output
    assert (paths[1] / "report.html").is_file()
    assert not (tmp_path / "report.html").exists()


def test_with_no_run_to_report_it_says_what_to_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = report()
    assert result.exit_code == 2
    assert "holds no run; pass one" in " ".join(result.stderr.split())


def test_runs_and_compare_together_is_a_mistake(single: Path) -> None:
    result = report(single, "--compare", single, single)
    assert result.exit_code == 2
    assert "or --compare A B, not both" in " ".join(result.stderr.split())


def test_the_config_names_the_model_the_workers_served(single: Path) -> None:
    served = [{**worker, "models": ["smollm2-135m-instruct"]} for worker in WORKER_SNAPSHOT]
    save_worker_snapshot(single, served)
    assert report(single).exit_code == 0
    page = Page((single / "report.html").read_text())
    assert page.row("config", "model") == ["model", "smollm2-135m-instruct"]


def test_never_solved_samples_are_sorted_and_say_why_they_have_no_answer(tmp_path: Path) -> None:
    ended = {"q10": "max_turns", "q2": "timeout", "q1": None}  # in the order they finished
    records = [
        record(sample_id, 0, False, answer=None, error=kind and {"kind": kind, "message": "."})
        for sample_id, kind in ended.items()
    ]
    run = make_run(tmp_path / "run", records, n_samples=1)
    assert report(run).exit_code == 0
    page = Page((run / "report.html").read_text())
    assert page.rows["never-solved"][1:] == [
        ["q1", "(no answer parsed from the output)"],
        ["q2", "(no answer: timeout)"],
        ["q10", "(no answer: max_turns)"],
    ]
