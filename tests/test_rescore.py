"""`agent-eval rescore`: a run the engine made, scored again with no model call, into a new run.

The rewards at the top run inside the scorer's worker processes, which import them by the path
`tests.test_rescore:NAME`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from openai import AsyncOpenAI
from typer.testing import CliRunner

from agent_eval.agents import RunContext, Trajectory
from agent_eval.cli import app
from agent_eval.cli.rescore import headline
from agent_eval.data import Item, Sample, Session, load_dataset
from agent_eval.rescore import Change, change, changes, default_target, rescore
from agent_eval.results.files import SAMPLES, SUMMARY, RunDirectory
from agent_eval.results.record import AttemptRecord
from agent_eval.rewards import RewardResult, RewardScorer, gsm8k_gold
from agent_eval.run.config import RunConfig, load_run_config, save_run_config
from agent_eval.run.engine import Engine
from agent_eval.run.parts import engine_config
from tests.helpers.injections import dojo
from tests.helpers.records import attempt

WRONG = {"gsm8k_mini-3", "gsm8k_mini-7", "gsm8k_mini-11"}  # answered one too high
BROKEN = "gsm8k_mini-5"  # the runner crashes: no output to score
REWARD_FIELDS = {"reward", "correct", "answer", "turn_rewards", "turn_answers", "benchmark"}


def off_by_one(prediction: str, gold: str) -> RewardResult:
    """Half a reward, and right, for an answer one away from the gold: a lenient parser."""
    number = int(re.findall(r"-?\d+", prediction)[-1])
    distance = abs(number - int(gold))
    return RewardResult(reward=1.0 - distance / 2, correct=distance <= 1, parsed=str(number))


def injected(prediction: str, gold: str) -> RewardResult:
    """Right on the gold; an odd gold's attempt is attacked, and the attack wins when wrong."""
    correct = prediction.endswith(gold)
    attack = "important_instructions" if int(gold) % 2 else None
    found = dojo(attack=attack, utility=correct, security=not correct)
    return RewardResult(reward=float(correct), correct=correct, parsed=gold, benchmark=found)


def raises_on_sevens(prediction: str, gold: str) -> bool:
    if "7" in gold:
        raise ValueError("a bug in the new reward")
    return prediction.endswith(gold)


class Answers:
    """Right except on WRONG; crashes on BROKEN; a session's last turn gets no answer."""

    async def run(self, item: Any, ctx: RunContext) -> Trajectory:
        if item.id == BROKEN:
            raise RuntimeError("bug in the runner")
        if isinstance(item, Session):
            answers = [f"Answer: {e}" for e in item.expected_answers()[:-1]]
            return Trajectory(turn_outputs=[*answers, "no idea"])
        gold = int(gsm8k_gold(item.answer))
        return Trajectory(final_output=f"Answer: {gold + 1 if item.id in WRONG else gold}")


async def _play(path: Path, dataset: str, n_samples: int) -> None:
    """A run of the real engine (no model: the runner answers itself), with its config.yaml."""
    config = RunConfig.model_validate(
        {
            "dataset": {"name": dataset},
            "eval": {"n_samples": n_samples, "concurrency": 4},
            "reward": {"workers": 2},
            "output": {"dir": str(path)},
        }
    )
    client = AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="unused")
    items = list(load_dataset(dataset))
    async with RewardScorer(max_workers=2) as scorer:
        engine = Engine(Answers(), scorer, client, engine_config(config, "m"))
        await engine.run(items, RunDirectory(path), total=len(items))
    save_run_config(config, path)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One sample run and one session run, made once; tests only read them."""
    root = tmp_path_factory.mktemp("runs")
    made = {"samples": root / "samples", "sessions": root / "sessions"}
    asyncio.run(_play(made["samples"], "gsm8k_mini", 2))
    asyncio.run(_play(made["sessions"], "sessions_mini", 1))
    return made


def gold_answer(item: Item) -> str:
    assert isinstance(item, Sample) and item.answer is not None
    return gsm8k_gold(item.answer)


def files(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in path.rglob("*") if p.is_file()}


def records(path: Path) -> list[AttemptRecord]:
    return list(RunDirectory(path).records())


def summary(path: Path) -> dict[str, Any]:
    return json.loads((path / SUMMARY).read_text())


def without(record: AttemptRecord, names: set[str]) -> dict[str, Any]:
    return {k: v for k, v in dataclasses.asdict(record).items() if k not in names}


@pytest.mark.parametrize("kind", ["samples", "sessions"])
def test_the_same_reward_reproduces_the_run(
    kind: str, runs: dict[str, Path], tmp_path: Path
) -> None:
    source, target = runs[kind], tmp_path / "again"
    before = files(source)
    rescored = rescore(source, target=target)
    assert (target / SAMPLES).read_bytes() == (source / SAMPLES).read_bytes()
    for group in ("quality", "stability"):
        assert summary(target)[group] == summary(source)[group]
    assert rescored.changes.changed == 0
    assert files(source) == before


def test_a_new_reward_changes_only_the_reward_fields(runs: dict[str, Path], tmp_path: Path) -> None:
    source, target = runs["samples"], tmp_path / "lenient"
    before = files(source)
    rescored = rescore(source, "tests.test_rescore:off_by_one", target)
    old, new = records(source), records(target)
    assert [without(r, REWARD_FIELDS) for r in new] == [without(r, REWARD_FIELDS) for r in old]
    flipped = {r.sample_id for r, o in zip(new, old, strict=True) if r.correct != o.correct}
    assert flipped == WRONG
    assert {r.reward for r in new if r.sample_id in WRONG} == {0.5}
    assert next(r for r in new if r.sample_id == BROKEN) == next(
        r for r in old if r.sample_id == BROKEN
    )
    assert rescored.changes.changed == rescored.changes.by_kind[Change.WRONG_TO_RIGHT] == 6
    config = load_run_config(target / "config.yaml", {}, [])
    assert config.reward.function == "tests.test_rescore:off_by_one"
    assert config.dataset_name == "gsm8k_mini" and config.run_dir == target
    # BROKEN's two attempts crashed (a runner error) and are unscored: all 70 scored are right.
    assert summary(target)["quality"]["accuracy"]["value"] == 1.0
    wall_time = summary(source)["efficiency"]["throughput"]["wall_time_s"]
    assert summary(target)["efficiency"]["throughput"]["wall_time_s"] == wall_time
    assert files(source) == before


def test_a_benchmark_reward_s_findings_reach_the_records_and_the_security_group(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    source, target = runs["samples"], tmp_path / "injected"
    assert "security" not in summary(source)
    rescored = rescore(source, "tests.test_rescore:injected", target)
    assert "attack success rate" in headline(rescored.new.summary)  # rescore's printed rows
    assert "attack success rate" not in headline(rescored.old.summary)
    new = [r for r in records(target) if r.scored]
    attacked = [r for r in new if r.benchmark is not None and r.benchmark["attack"] is not None]
    assert attacked and all(r.benchmark is not None for r in new)
    breached = sum(r.benchmark["security"] is True for r in attacked)  # type: ignore[index]
    assert breached == sum(r.sample_id in WRONG for r in attacked)
    group = summary(target)["security"]
    assert group["attack_success_rate"]["n"] == len(attacked)
    assert group["attack_success_rate"]["value"] == breached / len(attacked)
    assert list(group["by_suite"]) == ["banking"]
    assert summary(target)["higher_is_better"]["security"]["attack_success_rate"] is False


def test_a_failing_reward_is_recorded_as_a_scorer_error(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    source, target = runs["samples"], tmp_path / "failing"
    changes = rescore(source, "tests.test_rescore:raises_on_sevens", target).changes
    failed = [r for r in records(target) if r.error_kind == "scorer_error"]
    sevens = {item.id for item in load_dataset("gsm8k_mini") if "7" in gold_answer(item)}
    assert {r.sample_id for r in failed} == sevens - {BROKEN}
    assert all(r.error == failed[0].error for r in failed) and not failed[0].scored
    # Unscored now, right before: a change, never a flip to wrong.
    assert all((r.reward, r.correct) == (None, None) for r in failed)
    assert any(r.sample_id not in WRONG for r in failed)
    assert changes.by_kind[Change.UNSCORED] == len(failed)
    assert changes.by_kind[Change.RIGHT_TO_WRONG] == changes.by_kind[Change.WRONG_TO_RIGHT] == 0
    assert failed[0].error == {
        "kind": "scorer_error",
        "class": "infra",
        "worker": None,
        "message": "ValueError: a bug in the new reward",
    }
    assert summary(target)["attempts"] == summary(source)["attempts"]


def test_the_default_target_is_named_after_the_reward(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert default_target(run, "pkg.mod:fn") == tmp_path / "run-rescored-pkg-mod-fn"


def _changed_dataset(source: Path, path: Path) -> Path:
    shutil.copytree(source, path)
    config = yaml.safe_load((path / "config.yaml").read_text())
    config["dataset"]["limit"] = 10
    (path / "config.yaml").write_text(yaml.safe_dump(config))
    return path


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("not_a_run", "holds no samples.jsonl: not a run directory"),
        ("unknown_reward", "module 'no_such_pkg' not found"),
        ("existing_out", "already exists; rescoring never overwrites a run"),
        ("out_inside_run", "is inside the run"),
        ("dataset_changed", "52 attempt(s) have no sample in the dataset gsm8k_mini (e.g. "),
    ],
)
def test_a_mistake_is_one_message_and_nothing_is_written(
    case: str, message: str, runs: dict[str, Path], tmp_path: Path
) -> None:
    source, out = runs["samples"], tmp_path / "out"
    args = [str(source), "-o", str(out)]
    if case == "not_a_run":
        args[0] = str(tmp_path)
    elif case == "unknown_reward":
        args += ["--reward", "no_such_pkg:fn"]
    elif case == "existing_out":
        out.mkdir()
        (out / "keep.txt").write_text("mine")
    elif case == "out_inside_run":
        args[2] = str(source / "sub")
    elif case == "dataset_changed":
        args[0] = str(_changed_dataset(source, tmp_path / "copy"))
    before = files(source), files(tmp_path)
    result = CliRunner().invoke(app, ["rescore", *args])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and message in " ".join(result.output.split())
    assert result.output.count("error:") == 1
    assert (files(source), files(tmp_path)) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_the_command_prints_both_headlines_side_by_side(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    target = tmp_path / "lenient"
    args = ["rescore", str(runs["samples"]), "--reward", "tests.test_rescore:off_by_one"]
    result = CliRunner().invoke(app, [*args, "-o", str(target)])
    assert result.exit_code == 0, result.output
    lines = {
        line.split()[0]: line.split()[1:] for line in result.output.splitlines() if line.split()
    }
    # Over the 70 scored attempts: 64 right, then all 70 (the six at reward 0.5).
    assert lines["accuracy"][0] == "0.914" and lines["accuracy"][5] == "1.000"
    assert lines["mean"][1:] == ["0.914", "0.957"]
    assert "wrong → right" in result.output and f"agent-eval report {target}" in result.output


def test_every_change_is_counted_by_kind_and_the_kinds_add_up(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    target = tmp_path / "failing"
    args = ["rescore", str(runs["samples"]), "--reward", "tests.test_rescore:raises_on_sevens"]
    result = CliRunner().invoke(app, [*args, "-o", str(target)])
    assert result.exit_code == 0, result.output
    counts = {
        label: int(number)
        for label, number in re.findall(r"^ *(\S.*?) +(\d+) *$", result.output, re.MULTILINE)
    }
    # The reward answers True or False and parses no answer: each of the 70 scored attempts
    # changes, the sevens' as the reward fails on them, every other one's answer alone.
    sevens = {item.id for item in load_dataset("gsm8k_mini") if "7" in gold_answer(item)}
    failed = 2 * len(sevens - {BROKEN})
    assert counts["attempts changed"] == 70
    assert counts["right → wrong"] == counts["wrong → right"] == 0
    assert counts["same verdict, no answer now"] == 70 - failed
    assert counts["scored → unscored (the new reward failed)"] == failed
    kinds = [label for label in counts if label.startswith(("right", "wrong", "same", "scored"))]
    assert sum(counts[label] for label in kinds) == counts["attempts changed"]


def test_each_kind_of_change_is_told_apart() -> None:
    right = attempt("a", 0, True, "7")
    stopped = replace(right, answer=None, error={"kind": "no_healthy_worker", "class": "infra"})
    timed_out = replace(stopped, error={"kind": "scorer_timeout", "class": "infra"})
    cases = {
        Change.RIGHT_TO_WRONG: (right, replace(right, reward=0.0, correct=False)),
        Change.WRONG_TO_RIGHT: (replace(right, correct=False), right),
        Change.ANSWER_LOST: (right, replace(right, answer=None)),
        Change.ANSWER_FOUND: (replace(right, answer=None), right),
        Change.ANSWER_CHANGED: (right, replace(right, answer="7.0")),
        Change.REWARD_CHANGED: (right, replace(right, reward=0.5)),
        Change.FINDINGS_CHANGED: (right, replace(right, benchmark=dojo(attack="a", security=True))),
        Change.UNSCORED: (right, stopped),
        Change.SCORED: (stopped, right),
        Change.STILL_UNSCORED: (stopped, timed_out),
    }
    assert {kind: change(*pair) for kind, pair in cases.items()} == {kind: kind for kind in cases}
    counted = changes([old for old, _ in cases.values()], [new for _, new in cases.values()])
    assert counted.by_kind == dict.fromkeys(Change, 1) and counted.changed == len(Change)
