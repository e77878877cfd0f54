"""`agent-eval report TUNE_DIR`: the trials, history, Pareto front, importances and confirmation."""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os
import re
from pathlib import Path
from typing import Any

import optuna
import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState, create_trial
from rich.console import Console

from agent_eval.errors import ConfigError
from agent_eval.metrics import Estimate, summarize
from agent_eval.report.tuning import ConfirmedScore, Interval, Tuned, load_tune, tune_table
from agent_eval.report.tuning_page import curse_sentence, tune_page
from agent_eval.results import summary as summary_file
from agent_eval.results.files import RunDirectory
from agent_eval.tune import study_files
from tests.helpers.reports import EVIL, Page, report, runs_of_one_agent

ACCURACY, TOKENS, LATENCY = (
    "quality.accuracy",
    "efficiency.tokens.completion_mean",
    "efficiency.latency_s.p50",
)
SPACE = {
    "sampling.temperature": {"float": [0.0, 1.2]},
    "proxy.policy": {"categorical": ["session", "round_robin"]},
}
DISTRIBUTIONS = {
    "sampling.temperature": FloatDistribution(0.0, 1.2),
    "proxy.policy": CategoricalDistribution(["session", "round_robin"]),
}


def trial(
    number: int,
    temperature: float,
    state: TrialState = TrialState.COMPLETE,
    values: list[float] | None = None,
    intermediate: dict[int, float] | None = None,
    policy: str = "session",
    **attrs: Any,
) -> FrozenTrial:
    """A finished trial of the standard space, its run directory named after its number."""
    return create_trial(
        state=state,
        params={"sampling.temperature": temperature, "proxy.policy": policy},
        distributions=DISTRIBUTIONS,
        values=values,
        intermediate_values=intermediate,
        user_attrs={study_files.RUN_DIR: f"trial-{number}", **attrs},
    )


def make_tune(
    tune_dir: Path,
    objectives: dict[str, str],
    trials: list[FrozenTrial],
    subset: int | None = 200,
) -> Path:
    """A tune directory as `agent-eval tune` leaves it: the study, and a run per finished trial
    whose summary.json holds the trial's accuracy (the first value) with an interval."""
    tune_dir.mkdir(parents=True)
    study = optuna.create_study(
        storage=study_files.storage_url(tune_dir),
        study_name=study_files.STUDY_NAME,
        directions=[StudyDirection[direction.upper()] for direction in objectives.values()],
    )
    recorded = [{"metric": m, "direction": d} for m, d in objectives.items()]
    study.set_user_attr(study_files.OBJECTIVES, recorded)
    study.set_user_attr(study_files.SPACE, SPACE)
    study.set_user_attr(study_files.SUBSET, subset)
    for number, frozen in enumerate(trials):
        study.add_trial(frozen)
        if frozen.values is not None:
            write_summary(tune_dir / f"trial-{number}", frozen.values[0])
    return tune_dir


def write_summary(run_dir: Path, accuracy: float, half_width: float = 0.05) -> None:
    """A trial's summary.json whose accuracy is `accuracy`, over 200 attempts, +- `half_width`."""
    run_dir.mkdir(parents=True)
    interval = Estimate(accuracy, 0.0, accuracy - half_width, accuracy + half_width, 200)
    summary = dataclasses.replace(summarize([], math.nan), accuracy=interval)
    summary_file.write_summary(RunDirectory(run_dir), summary)


@pytest.fixture(autouse=True)
def quiet_optuna() -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)


@pytest.fixture
def one_objective(tmp_path: Path) -> Path:
    """Five trials for accuracy: trial 1 is best, 2 was pruned at 10% of its attempts, 3 failed."""
    trials = [
        trial(0, 0.9, values=[0.6], intermediate={5: 0.5, 10: 0.6}),
        trial(1, 0.2, values=[0.8], intermediate={5: 0.7, 10: 0.8}),
        trial(2, 1.1, TrialState.PRUNED, intermediate={5: 0.3, 10: 0.35}),
        trial(3, 0.5, TrialState.FAIL, failure="interrupted"),
        trial(4, 0.4, values=[0.7], intermediate={5: 0.75, 10: 0.7}),
    ]
    return make_tune(tmp_path / "tune", {ACCURACY: "maximize"}, trials)


def table_lines(tuned: Tuned) -> dict[str, str]:
    """The printed table's rows, by the trial number that starts them."""
    console = Console(file=io.StringIO(), width=200)
    console.print(tune_table(tuned))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    cells = [line.strip("│ ").split("│") for line in text.splitlines() if "│" in line]
    return {row[0].strip(): " | ".join(cell.strip() for cell in row) for row in cells}


def circles(html: str, figure_id: str) -> list[str]:
    """Each point of a figure's chart, as its tag and tooltip."""
    start = html.index(f'<figure id="{figure_id}">')
    body = html[start : html.index("</figure>", start)]
    return [part.split("</circle>")[0] for part in body.split("<circle ")[1:]]


def test_the_table_lists_every_trial_and_marks_the_best(one_objective: Path) -> None:
    rows = table_lines(load_tune(one_objective))
    assert rows["1 *"].split(" | ")[1:] == ["complete", "0.2", "session", "0.8", "0.0"]
    assert "0.35 (pruned at 10%)" in rows["2"]
    assert "fail (interrupted)" in rows["3"]
    assert not [label for label in rows if "*" in label and label != "1 *"]


def test_the_page_shows_what_was_tuned_and_every_trial(one_objective: Path) -> None:
    page = Page(tune_page(load_tune(one_objective)))
    assert page.row("objectives", ACCURACY) == [ACCURACY, "maximize"]
    assert page.row("space", "proxy.policy") == [
        "proxy.policy",
        '{"categorical": ["session", "round_robin"]}',
    ]
    assert "Each trial ran on 200 samples of the dataset." in "".join(page.text)
    assert "3 complete, 1 pruned, 1 fail" in "".join(page.text)
    best = page.row("trials", "1")
    assert best[-3:] == ["0.0", "trial-1", "best"]
    assert best[5] == "0.800 [0.75, 0.85]"  # the subset interval from trial-1/summary.json
    assert page.row("trials", "2")[4] == "0.35 (pruned at 10%)"
    assert "trial-0" in page.references


def test_the_history_has_a_point_per_trial_with_a_value_and_pruned_ones_hollow(
    one_objective: Path,
) -> None:
    html = tune_page(load_tune(one_objective))
    points = circles(html, "history-0")
    assert len(points) == 4  # three complete, one pruned; the failed trial has no value
    hollow = [point for point in points if 'fill="#fff"' in point]
    assert len(hollow) == 1 and "trial 2 " in hollow[0]
    history = html[html.index('<figure id="history-0">') :]
    assert "<title>best so far: 0.8</title></polyline>" in history[: history.index("</figure>")]
    # one running line per trial that reported, and a ring where pruning cut trial 2
    figure = html[html.index('<figure id="intermediate">') :]
    assert figure[: figure.index("</figure>")].count("<polyline") == 4
    assert ["trial 2 pruned at 10% of attempts" in p for p in circles(html, "intermediate")] == [
        True
    ]
    assert 'id="pareto' not in html


def test_importances_are_listed_for_the_parameter_that_varied(one_objective: Path) -> None:
    tuned = load_tune(one_objective)
    (importance,) = tuned.importances
    assert importance.why_not is None
    assert importance.by_param == {"sampling.temperature": 1.0}  # proxy.policy never varied
    page = Page(tune_page(tuned))
    assert page.row("importances", "sampling.temperature") == ["sampling.temperature", "1.000"]


def test_without_a_varied_parameter_the_importances_say_why(tmp_path: Path) -> None:
    trials = [trial(0, 0.5, values=[0.6]), trial(1, 0.5, values=[0.8])]
    tune = make_tune(tmp_path / "tune", {ACCURACY: "maximize"}, trials)
    html = tune_page(load_tune(tune))
    assert "No parameter took more than one value in the complete trials" in html
    assert 'id="importances"' not in html


def test_two_objectives_get_a_pareto_plot_of_exactly_the_non_dominated_trials(
    tmp_path: Path,
) -> None:
    values = [[0.8, 300], [0.7, 200], [0.6, 400], [0.8, 350], [0.5, 100], [0.7, 200]]
    trials = [trial(n, 0.1 * n, values=[float(v) for v in pair]) for n, pair in enumerate(values)]
    objectives = {ACCURACY: "maximize", TOKENS: "minimize"}
    tuned = load_tune(make_tune(tmp_path / "tune", objectives, trials))
    # 2 is beaten by 0 on both; 3 by 0 on tokens; 5 ties 1, which beats neither.
    assert tuned.best == {0, 1, 4, 5}
    html = tune_page(tuned)
    front = [p for p in circles(html, "pareto") if BEST_FILL in p]
    assert sorted(p.split("<title>")[1].split(":")[0] for p in front) == [
        "trial 0",
        "trial 1",
        "trial 4",
        "trial 5",
    ]
    assert len(circles(html, "pareto")) == 6
    page = Page(html)
    marked = [row[0] for row in page.rows["trials"] if row and row[-1] == "Pareto front"]
    assert marked == ["0", "1", "4", "5"]
    assert {"history-0", "history-1"} <= set(page.figures)
    assert "intermediate" not in page.figures


BEST_FILL = 'fill="#54a24b"'


def test_more_objectives_list_the_front_in_a_table(tmp_path: Path) -> None:
    values = [[0.8, 300, 2.0], [0.8, 300, 3.0], [0.6, 100, 5.0]]
    trials = [trial(n, 0.1 * n, values=[float(v) for v in row]) for n, row in enumerate(values)]
    objectives = {ACCURACY: "maximize", TOKENS: "minimize", LATENCY: "minimize"}
    page = Page(tune_page(load_tune(make_tune(tmp_path / "tune", objectives, trials))))
    assert [row[0] for row in page.rows["front"][1:]] == ["0", "2"]
    assert "pareto" not in page.figures


def test_a_confirmation_shows_both_intervals_and_how_optimistic_the_subset_was(
    one_objective: Path,
) -> None:
    confirmation = {
        "trial": 1,
        "config": "best.yaml",
        "run_dir": "confirm-1",
        "objectives": {ACCURACY: {"subset": 0.81, "full": 0.74}},
    }
    (one_objective / study_files.CONFIRM_FILE).write_text(
        json.dumps({"confirmations": [confirmation]})
    )
    write_summary(one_objective / "confirm-1", 0.74, half_width=0.02)
    tuned = load_tune(one_objective)
    (score,) = tuned.confirmations[0].scores
    assert (score.subset.low, score.subset.high) == pytest.approx((0.75, 0.85))
    assert (score.full.low, score.full.high) == pytest.approx((0.72, 0.76))
    html = tune_page(tuned)
    assert "0.810, 0.070 higher than the full one (0.740)" in html
    assert "the subset flattered the winner" in html
    chart = html[html.index('<figure id="confirm-1-0">') :]
    chart = chart[: chart.index("</figure>")]
    assert "0.81 [0.75, 0.85]" in chart and "0.74 [0.72, 0.76]" in chart  # bars with whiskers
    assert chart.count("h8") == 4


def test_hostile_names_are_escaped(tmp_path: Path) -> None:
    study_dir = tmp_path / "tune"
    frozen = create_trial(
        params={EVIL: EVIL},
        distributions={EVIL: CategoricalDistribution([EVIL, "x"])},
        values=[0.5],
        user_attrs={study_files.RUN_DIR: "javascript:alert(1)", study_files.FAILURE: EVIL},
    )
    make_tune(study_dir, {EVIL: "maximize"}, [frozen])
    html = tune_page(load_tune(study_dir))
    page = Page(html)
    assert EVIL not in html
    assert EVIL in "".join(page.text)
    assert not {"script", "img", "iframe", "object"} & page.tags
    assert all(not ref.lower().startswith("javascript:") for ref in page.references)
    rows = table_lines(load_tune(study_dir))
    assert EVIL in rows["0 *"]  # rich markup in a name is shown, not interpreted


def test_a_folder_that_is_not_a_tune_directory_is_named(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=re.escape(f"{tmp_path} holds no study.db: not a tune directory")
    ):
        load_tune(tmp_path)


def test_a_corrupt_study_is_a_config_error_and_stays_untouched(tmp_path: Path) -> None:
    (tmp_path / "study.db").write_bytes(b"")
    with pytest.raises(ConfigError, match=re.escape("study.db cannot be read as an Optuna study")):
        load_tune(tmp_path)
    assert (tmp_path / "study.db").read_bytes() == b""  # read-only: no tables created
    (tmp_path / "study.db").write_text("not a database")
    result = report(tmp_path)
    assert result.exit_code == 2
    assert "cannot be read as an Optuna study" in result.output


def test_report_writes_the_tune_page(one_objective: Path) -> None:
    result = report(one_objective)
    assert result.exit_code == 0, result.output
    assert "1 *" in result.output and "pruned" in result.output
    page = Page((one_objective / "report.html").read_text())
    assert {"history-0", "intermediate"} <= set(page.figures)


def test_a_study_of_failed_trials_only_gives_a_page_of_notes(tmp_path: Path) -> None:
    trials = [trial(0, 0.5, TrialState.FAIL, failure="interrupted")]
    tune = make_tune(tmp_path / "tune", {ACCURACY: "maximize"}, trials, subset=None)
    result = report(tune)
    assert result.exit_code == 0, result.output
    text = "".join(Page((tune / "report.html").read_text()).text)
    assert "No trial has a value yet." in text
    assert "No trial reported a running score." in text
    assert "two complete trials or more; there are 0" in text
    assert "Each trial ran on the whole dataset." in text


@pytest.mark.parametrize(
    ("maximize", "subset", "full", "said"),
    [
        (True, 0.81, 0.74, "0.070 higher than the full one (0.740): the subset flattered"),
        (True, 0.21, 0.35, "0.140 lower than the full one (0.350): the subset did not flatter"),
        (False, 120.0, 150.0, "30.000 lower than the full one (150.000): the subset flattered"),
        (False, 150.0, 120.0, "higher than the full one (120.000): the subset did not flatter"),
        (True, 0.5, 0.5, "the same as the full one (0.500): the subset did not flatter"),
    ],
)
def test_the_winners_curse_sentence_follows_the_direction(
    maximize: bool, subset: float, full: float, said: str
) -> None:
    score = ConfirmedScore("m", maximize, Interval(subset), Interval(full))
    assert said in curse_sentence(score)


def test_without_a_folder_named_the_latest_tune_under_runs_is_reported(
    one_objective: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = one_objective.parent / "runs"
    (older,) = runs_of_one_agent(runs, 1)
    tune = one_objective.rename(runs / "tune-math_calculator")
    os.utime(tune / study_files.STUDY_FILE, (1_900_000_000,) * 2)  # after the run's last attempt
    monkeypatch.chdir(one_objective.parent)
    result = report()
    assert result.exit_code == 0, result.output
    assert (tune / "report.html").is_file() and not (older / "report.html").exists()
