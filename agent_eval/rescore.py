"""A finished run scored again from its stored outputs, with no model call, into a new run.

The source run is only read. The new one is written to a hidden folder beside its target and
renamed into place at the end, so an error or Ctrl-C never leaves half a run behind.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from itertools import islice
from pathlib import Path
from typing import BinaryIO

from agent_eval.data import Item
from agent_eval.errors import ConfigError
from agent_eval.metrics import AttemptScore, Summary
from agent_eval.report.runs import Run, load_run
from agent_eval.results.files import SAMPLES, RunDirectory
from agent_eval.results.record import AttemptRecord
from agent_eval.results.summary import build_summary, write_summary
from agent_eval.rewards import RewardScorer, load_reward
from agent_eval.run.config import RunConfig, safe_name, save_run_config
from agent_eval.run.parts import dataset_items
from agent_eval.run.scoring import score_attempt

WINDOW = 256
"""Attempts scored at once: many more than scoring processes, so none waits for work."""


class Change(StrEnum):
    """One kind of difference between an attempt's old and new score; each changed attempt is of
    exactly one kind, the first that fits in this order."""

    RIGHT_TO_WRONG = "right → wrong"
    WRONG_TO_RIGHT = "wrong → right"
    ANSWER_LOST = "same verdict, no answer now"
    ANSWER_FOUND = "same verdict, an answer now"
    ANSWER_CHANGED = "same verdict, another answer"
    REWARD_CHANGED = "same verdict and answer, another reward"
    FINDINGS_CHANGED = "same score, other benchmark findings"
    UNSCORED = "scored → unscored (the new reward failed)"
    SCORED = "unscored → scored"
    STILL_UNSCORED = "unscored both times, another error"


@dataclass(frozen=True)
class Changes:
    """How many attempts the new reward scored differently, by kind of change."""

    by_kind: dict[Change, int]
    """Every kind, in Change's order, with its count (0 for none)."""

    @property
    def changed(self) -> int:
        """The attempts scored differently: the kinds' counts add up to it."""
        return sum(self.by_kind.values())


@dataclass(frozen=True)
class Rescored:
    """The source run and the new one, as the report reads them."""

    old: Run
    new: Run
    changes: Changes


def default_target(source: Path, reward: str) -> Path:
    """RUN-rescored-REWARD beside the source run."""
    source = source.resolve()
    return source.with_name(f"{source.name}-rescored-{safe_name(reward)}")


def rescore(source: Path, reward: str | None = None, target: Path | None = None) -> Rescored:
    """Score every stored attempt of `source` again and write the new run to `target`.

    Raises:
        ConfigError: `source` is not a finished run with its config, the reward does not load,
            `target` holds files, or an attempt's sample is no longer in the dataset.
    """
    old = load_run(source)
    config = _config(old)
    spec = reward or config.reward.function
    load_reward(spec)  # a bad spec fails here, before any folder is made
    target = target or default_target(source, spec)
    _check_target(source, target)
    items = _items(config, old.scores)
    new_config = _new_config(config, spec, target)
    partial = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=_made(target.parent)))
    try:
        scores, summary = _write_run(old, new_config, items, partial)
        partial.replace(target)  # an empty target folder is replaced too
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    new = Run(target, new_config, scores, summary, workers=None, notes=[])
    return Rescored(old, new, changes(old.scores, scores))


def changes(old: Iterable[AttemptScore], new: Iterable[AttemptScore]) -> Changes:
    """The attempts scored differently, in the same order on both sides, by kind of change."""
    counted = Counter(change(a, b) for a, b in zip(old, new, strict=True) if a != b)
    return Changes({kind: counted[kind] for kind in Change})


def change(old: AttemptScore, new: AttemptScore) -> Change:
    """The kind of change from one score of an attempt to another, different one."""
    if old.scored != new.scored:
        return Change.UNSCORED if old.scored else Change.SCORED
    if not old.scored:
        return Change.STILL_UNSCORED
    if old.correct != new.correct:
        return Change.WRONG_TO_RIGHT if new.correct else Change.RIGHT_TO_WRONG
    if (old.answer, old.turn_answers) == (new.answer, new.turn_answers):
        same_reward = (old.reward, old.turn_rewards) == (new.reward, new.turn_rewards)
        return Change.FINDINGS_CHANGED if same_reward else Change.REWARD_CHANGED
    if old.answer is not None and new.answer is None:
        return Change.ANSWER_LOST
    return Change.ANSWER_FOUND if old.answer is None else Change.ANSWER_CHANGED


def _config(old: Run) -> RunConfig:
    if old.config is None:
        raise ConfigError(
            f"{old.path} holds no config.yaml: its dataset and reward are unknown, so it "
            "cannot be rescored"
        )
    return old.config


def _check_target(source: Path, target: Path) -> None:
    if target.resolve().is_relative_to(source.resolve()):
        raise ConfigError(f"{target} is inside the run {source}, which rescoring never changes")
    if target.is_dir() and not any(target.iterdir()):
        return
    if target.exists():
        raise ConfigError(
            f"{target} already exists; rescoring never overwrites a run: pass another -o, "
            "or remove it"
        )


def _made(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _items(config: RunConfig, scores: list[AttemptScore]) -> dict[str, Item]:
    """The dataset by sample id; an attempt whose sample is gone is a ConfigError."""
    items = {item.id: item for item in dataset_items(config)}
    missing = [score.sample_id for score in scores if score.sample_id not in items]
    if missing:
        raise ConfigError(
            f"{len(missing)} attempt(s) have no sample in the dataset {config.dataset_name} "
            f"(e.g. {missing[0]!r}): it changed since the run; point dataset.path at the "
            "data the run used"
        )
    return items


def _new_config(config: RunConfig, spec: str, target: Path) -> RunConfig:
    """The source run's config with the new reward and run directory."""
    reward = config.reward.model_copy(update={"function": spec})
    output = config.output.model_copy(update={"dir": target})
    return config.model_copy(update={"reward": reward, "output": output})


def _write_run(
    old: Run, config: RunConfig, items: Mapping[str, Item], folder: Path
) -> tuple[list[AttemptScore], Summary]:
    """The new run's samples.jsonl, config.yaml and summary.json in `folder`."""
    with (folder / SAMPLES).open("wb") as samples:
        scores = asyncio.run(_rescore_records(config, items, old.path, samples))
    save_run_config(config, folder)
    # The new attempts' figures; the source run's measured rates and end, which rescoring keeps.
    ks, kept = list(old.summary.pass_at_k), old.summary
    summary = build_summary(scores, ks, kept.throughput, kept.complete, config.seed_scope())
    write_summary(RunDirectory(folder), summary)
    return scores, summary


async def _rescore_records(
    config: RunConfig, items: Mapping[str, Item], source: Path, samples: BinaryIO
) -> list[AttemptScore]:
    """Each record of `source` rescored and written to `samples` in order; their scores."""
    scores: list[AttemptScore] = []
    reward = config.reward
    async with RewardScorer(
        reward.function,
        timeout=reward.timeout,
        max_workers=reward.workers,
        startup_timeout=reward.start_timeout,
    ) as scorer:
        for chunk in _chunks(RunDirectory(source).records(), WINDOW):
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(_rescored(scorer, items, r)) for r in chunk]
            for task in tasks:
                record = task.result()
                samples.write(record.to_line())
                scores.append(record.score())
    return scores


async def _rescored(
    scorer: RewardScorer, items: Mapping[str, Item], record: AttemptRecord
) -> AttemptRecord:
    """The record with its outputs scored again; one stopped before any output, or scored by
    its check command (whose verdict no reward on the text can redo), is kept as is."""
    stored = record.trajectory
    final, turns = stored.get("final_output"), stored.get("turn_outputs") or []
    ended = stored.get("error")
    if ended is not None and final is None and all(output is None for output in turns):
        return record
    if (stored.get("program") or {}).get("check") is not None:
        return record
    scored = await score_attempt(scorer, items[record.sample_id], final, turns)
    # A stopped attempt keeps why it stopped; otherwise a scorer failure is its error.
    failure = scored.failure.to_dict() if scored.failure is not None else None
    return replace(record, **scored.fields(), error=ended or failure)


def _chunks(records: Iterator[AttemptRecord], size: int) -> Iterator[list[AttemptRecord]]:
    while chunk := list(islice(records, size)):
        yield chunk
