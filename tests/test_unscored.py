"""Infrastructure failures are played again, then left unscored: never counted as wrong answers."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import StartWorkers
from tests.test_cli_run import ROWS, agent_eval, finish, lines, summary, write_dataset

# One play again, no proxy retry; breakers that stay closed, so each try fails at random.
FAST_RETRIES = (
    "eval.retries=1",
    "eval.retry_backoff=0.01",
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
        *FAST_RETRIES, "eval.max_unscored=1", cwd=tmp_path,
    )  # fmt: skip
    code, _, err = await finish(process, 300)
    assert code == 0, err
    records = lines(run_dir)
    assert len(records) == ROWS * ATTEMPTS
    unscored = [r for r in records if r["error"] and r["error"]["class"] == "infra"]
    scored = [r for r in records if r not in unscored]
    # Each unscored attempt was played twice (once again), and failed both times.
    assert all(len(r["trajectory"]["retries"]) == 1 for r in unscored)
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
    played_again = [r for r in scored if r["trajectory"]["retries"]]
    assert played_again, "at 60% failures some attempt should have needed a second play"
    assert all(r["session_id"].endswith("-retry1") for r in played_again)


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
        *FAST_RETRIES, cwd=tmp_path,
    )  # fmt: skip
    code, _, err = await finish(process, 300)
    assert code == 3, err
    text = " ".join(err.split())
    assert "stopped early" in text and "eval.max_unscored=0.05" in text
    assert f"agent-eval run --resume {run_dir} --retry-errors" in text
    assert "Traceback" not in err
    result = summary(run_dir)
    assert result["complete"] is False
    # 5% of 40 attempts is 2: the third unscored one stops the run; those in flight finish.
    assert 3 <= result["unscored"] <= 4 and result["attempts"] == result["unscored"]
    assert result["quality"]["accuracy"]["value"] is None  # nothing scored: no accuracy at all
