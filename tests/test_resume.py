"""`run --resume`: `--retry-errors` plays the unscored attempts again, and only those."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

from agent_eval.agents.trajectory import Trajectory, TrajectoryError
from agent_eval.data import Sample
from agent_eval.engine import attempt_record
from agent_eval.results import UNSCORED, RunDirectory
from tests.conftest import StartWorkers
from tests.test_cli_run import ROWS, agent_eval, finish, lines, summary, write_dataset


def record_line(sample_id: str, error: TrajectoryError | None) -> bytes:
    """A finished attempt's samples.jsonl line, stopped by `error` if one is given."""
    trajectory = Trajectory(error=error)
    scores = [(0.0, False, None)] if error else [(1.0, True, "1")]
    record = attempt_record(
        Sample(sample_id, "q", "1"), 0, 7, f"{sample_id}-0", trajectory, scores, 0.1
    )
    return record.to_line()


def test_set_aside_moves_the_unscored_records_and_keeps_the_rest_as_they_were(
    tmp_path: Path,
) -> None:
    run = RunDirectory(tmp_path)
    kept = [record_line("right", None), record_line("long", TrajectoryError("max_turns", "m"))]
    unscored = [
        record_line("down", TrajectoryError("upstream_error", "502")),
        record_line("odd", TrajectoryError("a_third_party_kind", "?")),  # unknown: infra
    ]
    run.samples.write_bytes(b"".join([kept[0], unscored[0], kept[1], unscored[1]]))
    assert run.set_aside_unscored() == 2
    assert run.samples.read_bytes() == b"".join(kept)
    aside = [json.loads(line) for line in (tmp_path / UNSCORED).read_text().splitlines()]
    assert [r["sample_id"] for r in aside] == ["down", "odd"]
    assert all(datetime.fromisoformat(r["set_aside_at"]).tzinfo for r in aside)
    assert [r.sample_id for r in RunDirectory(tmp_path).records()] == ["right", "long"]
    # Nothing left to set aside: both files stay as they are.
    assert run.set_aside_unscored() == 0
    assert run.samples.read_bytes() == b"".join(kept)
    assert len((tmp_path / UNSCORED).read_text().splitlines()) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["samples.jsonl", UNSCORED]


async def test_retry_errors_plays_again_exactly_the_unscored_attempts(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = await start_workers(1)
    data = write_dataset(tmp_path / "say.jsonl")
    common = ("--dataset", str(data), "--endpoint", worker.url, "-n", "2")
    clean, broken = tmp_path / "clean", tmp_path / "broken"
    assert (await finish(await agent_eval("run", *common, "-o", str(clean), cwd=tmp_path)))[0] == 0
    # An interrupted run: the first half of its attempts finished, no summary yet.
    shutil.copytree(clean, broken)
    (broken / "summary.json").unlink()
    first_half = (broken / "samples.jsonl").read_bytes().splitlines(keepends=True)[:ROWS]
    (broken / "samples.jsonl").write_bytes(b"".join(first_half))

    # It is resumed while the worker answers 500 to everything: the rest fail, unscored.
    worker.behavior.error_status = 500
    no_retries = "proxy.retry.max_retries=0"  # a proxy setting: not what a run's results are
    code, _, err = await finish(
        await agent_eval("run", "--resume", str(broken), no_retries, cwd=tmp_path)
    )
    assert code == 0, err
    failed = {(r["sample_id"], r["attempt"]): r["seed"] for r in lines(broken)[ROWS:]}
    assert len(failed) == ROWS and all(r["error"]["class"] == "infra" for r in lines(broken)[ROWS:])

    worker.behavior.error_status = None
    code, _, err = await finish(
        await agent_eval("run", "--resume", str(broken), "--retry-errors", cwd=tmp_path)
    )
    assert code == 0, err
    assert f"playing {ROWS} unscored attempts again" in err
    aside = [json.loads(line) for line in (broken / UNSCORED).read_text().splitlines()]
    assert {(r["sample_id"], r["attempt"]): r["seed"] for r in aside} == failed
    assert all("set_aside_at" in r for r in aside)
    final = lines(broken)
    assert (broken / "samples.jsonl").read_bytes().startswith(b"".join(first_half))
    replayed = {(r["sample_id"], r["attempt"]): r["seed"] for r in final[ROWS:]}
    assert replayed == failed  # the same attempts, with the same seeds
    assert len({(r["sample_id"], r["attempt"]) for r in final}) == len(final) == ROWS * 2
    assert all(r["error"] is None for r in final)
    for group in ("quality", "stability"):
        assert summary(broken)[group] == summary(clean)[group]

    # Nothing unscored left: said so, and the run finishes as a plain resume.
    code, _, err = await finish(
        await agent_eval("run", "--resume", str(broken), "--retry-errors", cwd=tmp_path)
    )
    assert code == 0, err
    assert "no unscored attempts; finishing it as a normal resume" in err
    assert lines(broken) == final


async def test_retry_errors_without_resume_is_a_mistake(tmp_path: Path) -> None:
    code, out, err = await finish(await agent_eval("run", "--retry-errors", cwd=tmp_path), 60)
    assert code == 2, out + err
    assert "--retry-errors" in err and "--resume" in err and "Traceback" not in err
