"""Infrastructure failures are replayed, then left unscored: never counted as wrong answers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.helpers.cli_runs import ROWS, agent_eval, finish, lines, summary, write_dataset
from tests.helpers.proxy import StartWorkers

# One replay, no proxy retry; breakers that stay closed, so each try fails at random.
FAST_REPLAYS = (
    "eval.replays=1",
    "eval.replay_backoff=0.01",
    "proxy.retry.max_retries=0",
    "proxy.health.breaker_failures=1000",
)


# Attempts per sample: with about one play in five failing, 60 attempts all but surely have
# some that a second play scored.
ATTEMPTS = 6


def right(sample_id: str) -> bool:
    """Whether the known-answer data set's sample is answered right: even rows (ids count
    from 1, so say-1 is row 0) are."""
    return (int(sample_id.rsplit("-", 1)[-1]) - 1) % 2 == 0


async def test_failing_workers_leave_attempts_unscored_not_wrong(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    workers = await start_workers(2)
    for worker in workers:
        worker.behavior.update({"error_status": 503, "error_rate": 0.6})
    data, run_dir = write_dataset(tmp_path / "say.jsonl"), tmp_path / "run"
    endpoints = [arg for w in workers for arg in ("--endpoint", w.url)]
    process = await agent_eval(
        "run", "--dataset", str(data), *endpoints, "-n", str(ATTEMPTS), "-o", str(run_dir),
        *FAST_REPLAYS, "eval.max_unscored=1", cwd=tmp_path,
    )  # fmt: skip
    code, _, err = await finish(process, 300)
    assert code == 0, err
    records = lines(run_dir)
    assert len(records) == ROWS * ATTEMPTS
    unscored = [r for r in records if r["error"] and r["error"]["class"] == "infra"]
    scored = [r for r in records if r not in unscored]
    # Each unscored attempt was played twice (replayed once), and failed both times.
    assert all(len(r["trajectory"]["replays"]) == 1 for r in unscored)
    assert all(r["error"] is None for r in scored)
    result = summary(run_dir)
    assert (result["attempts"], result["scored"], result["unscored"]) == (
        ROWS * ATTEMPTS,
        len(scored),
        len(unscored),
    )
    assert sum(result["unscored_by_kind"].values()) == len(unscored)
    # The accuracy is the clean run's over the same attempts: failures never count as wrong.
    expected = sum(right(r["sample_id"]) for r in scored) / len(scored)
    assert result["quality"]["accuracy"]["value"] == expected
    assert result["complete"] is True
    replayed = [r for r in scored if r["trajectory"]["replays"]]
    assert replayed, "at 60% failures some attempt should have needed a replay"
    assert all(r["session_id"].endswith("-replay1") for r in replayed)


async def test_over_the_unscored_budget_the_run_stops_with_exit_3(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    workers = await start_workers(2)
    for worker in workers:
        worker.behavior.update({"error_status": 500})
    data, run_dir = write_dataset(tmp_path / "say.jsonl"), tmp_path / "run"
    endpoints = [arg for w in workers for arg in ("--endpoint", w.url)]
    process = await agent_eval(
        "run", "--dataset", str(data), *endpoints, "-n", "4", "-j", "2", "-o", str(run_dir),
        *FAST_REPLAYS, cwd=tmp_path,
    )  # fmt: skip
    code, _, err = await finish(process, 300)
    assert code == 3, err
    text = " ".join(err.split())
    assert "stopped early" in text and "eval.max_unscored=0.05" in text
    assert f"agent-eval run --resume {run_dir} --replay-unscored" in text
    assert "Traceback" not in err
    result = summary(run_dir)
    assert result["complete"] is False
    # 5% of 40 attempts is 2: the third unscored one stops the run; those in flight finish.
    assert 3 <= result["unscored"] <= 4 and result["attempts"] == result["unscored"]
    assert result["quality"]["accuracy"]["value"] is None  # nothing scored: no accuracy at all


NO_REPLAYS = (*FAST_REPLAYS, "eval.replays=0", "eval.max_unscored=1")
"""Each failed call leaves its attempt unscored; none stops the run."""
SCORE_FIELDS = ("reward", "correct", "turn_rewards")
"""What a line holds only when its attempt was scored."""


async def run_with_unscored_attempts(start_workers: StartWorkers, tmp_path: Path) -> Path:
    """A finished run of 20 attempts whose first few calls the worker answered with a 500."""
    (worker,) = await start_workers(1)
    worker.behavior.update({"error_status": 500, "error_count": 4})
    data, run_dir = write_dataset(tmp_path / "say.jsonl"), tmp_path / "run"
    process = await agent_eval(
        "run", "--dataset", str(data), "--endpoint", worker.url, "-n", "2", "-j", "1",
        "-o", str(run_dir), *NO_REPLAYS, cwd=tmp_path,
    )  # fmt: skip
    code, _, err = await finish(process, 300)
    assert code == 0, err
    return run_dir


def scores(records: list[dict]) -> list[tuple[object, ...]]:
    """Each attempt's ids and score fields, in the file's order."""
    return [(r["sample_id"], r["attempt"], *(r[n] for n in SCORE_FIELDS)) for r in records]


def expected_accuracy(records: list[dict]) -> float:
    """The accuracy of the known-answer run over its scored attempts, from the sample ids."""
    scored = [r for r in records if r["error"] is None]
    return sum(right(r["sample_id"]) for r in scored) / len(scored)


def as_written_before(run_dir: Path, copy: Path) -> Path:
    """A copy of the run whose samples.jsonl is as schema 1 wrote it: an unscored attempt with
    reward 0.0 and correct false, as if answered wrong."""
    shutil.copytree(run_dir, copy)
    old = [
        {**r, "schema": 1, **({} if r["error"] is None else {"reward": 0.0, "correct": False})}
        for r in lines(run_dir)
    ]
    (copy / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in old))
    return copy


async def rescored(run_dir: Path, cwd: Path) -> Path:
    """`agent-eval rescore` of the run, with its own reward, into a new folder."""
    target = run_dir.with_name(run_dir.name + "-rescored")
    process = await agent_eval("rescore", str(run_dir), "-o", str(target), cwd=cwd)
    code, _, err = await finish(process)
    assert code == 0, err
    return target


async def test_unscored_attempts_are_written_as_null_and_counted_as_before(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    run_dir = await run_with_unscored_attempts(start_workers, tmp_path)
    records = lines(run_dir)
    unscored = [r for r in records if r["error"] is not None]
    assert unscored and all(r["error"]["class"] == "infra" for r in unscored)
    # Read without our code, an unscored attempt says it was never scored: no reward, no verdict.
    assert all(r["schema"] == 3 for r in records)
    assert all(r[name] is None for r in unscored for name in SCORE_FIELDS)
    assert all(isinstance(r["reward"], float) and isinstance(r["correct"], bool)
               for r in records if r["error"] is None)  # fmt: skip
    result = summary(run_dir)
    assert (result["scored"], result["unscored"]) == (len(records) - len(unscored), len(unscored))
    assert result["quality"]["accuracy"]["value"] == expected_accuracy(records)

    again = await rescored(run_dir, tmp_path)
    assert scores(lines(again)) == scores(records)
    assert summary(again)["quality"] == result["quality"]

    # Played again by a worker that now answers, the run ends as a clean run would.
    code, _, err = await finish(
        await agent_eval("run", "--resume", str(run_dir), "--replay-unscored", cwd=tmp_path)
    )
    assert code == 0, err
    assert all(r["error"] is None for r in lines(run_dir))
    assert summary(run_dir)["quality"]["accuracy"]["value"] == 0.5


async def test_a_file_written_before_reads_with_the_same_figures(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    new = await run_with_unscored_attempts(start_workers, tmp_path)
    old = as_written_before(new, tmp_path / "old")
    unscored = sum(r["error"] is not None for r in lines(new))
    # Compared attempt by attempt, the two files are one run: every figure the same.
    code, out, err = await finish(
        await agent_eval("report", "--compare", str(new), str(old), "--json", cwd=tmp_path)
    )
    assert code == 0, err
    compared = json.loads(out)
    assert compared["metrics"] and all(row["a"] == row["b"] for row in compared["metrics"])
    assert compared["a_only"] == compared["b_only"] == []
    assert compared["left_out_unscored"] == unscored
    assert compared["metrics"][0]["a"] == expected_accuracy(lines(new))
    # Rewritten by this version (a rescore), the old file's unscored attempts come out as null.
    again = await rescored(old, tmp_path)
    assert all(r[n] is None for r in lines(again) if r["error"] for n in SCORE_FIELDS)
    assert scores(lines(again)) == scores(lines(new))
    assert summary(again)["quality"] == summary(new)["quality"]
    # A resume of the old file plays nothing and sums it up as the new one is.
    (old / "summary.json").unlink()
    written = (old / "samples.jsonl").read_bytes()
    code, _, err = await finish(await agent_eval("run", "--resume", str(old), cwd=tmp_path))
    assert code == 0, err
    assert (old / "samples.jsonl").read_bytes() == written
    for group in ("quality", "stability", "unscored", "unscored_by_kind"):
        assert summary(old)[group] == summary(new)[group]
