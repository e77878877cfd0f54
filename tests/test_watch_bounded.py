"""`agent-eval watch` with the bounded trigger, over mock workers that swap weights as SGLang
does: the first checkpoint is evaluated, a probe plays on while nothing is known, a check
clears as soon as it may, and a collapse is found after a few samples and evaluated."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from agent_eval.cli import app
from agent_eval.results.record import AttemptRecord
from agent_eval.run.config import load_run_config
from agent_eval.run.evaluation import plan
from agent_eval.run.serving import Served
from agent_eval.run.workers import WorkerEndpoint
from agent_eval.trigger import checkpoint_server
from agent_eval.trigger.probe import Probe
from agent_eval.trigger.probing import Outcomes
from agent_eval.trigger.watch import watch
from tests.helpers.observer import QuietObserver
from tests.helpers.proxy import MakeClient, StartProxy, StartWorkers
from tests.helpers.tune_jobs import two_step_workers, write_sums
from tests.helpers.view_runs import record
from tests.helpers.waits import eventually
from tests.helpers.watches import decisions, fake_serving

ROWS, PROBE, CHECK = 120, 20, 100


async def test_probes_stop_once_clear_and_a_collapse_fires(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    start_workers: StartWorkers,
    start_proxy: StartProxy,
    make_client: MakeClient,
) -> None:
    workers = await two_step_workers(start_workers, 2)
    base_url = await start_proxy(workers)
    endpoints = [WorkerEndpoint(w.url, "/health") for w in workers]
    served = Served(base_url, "unused", make_client(base_url), "mock-model", endpoints)
    monkeypatch.setattr(checkpoint_server, "serving", fake_serving(served, []))
    checkpoints, out = tmp_path / "ckpts", tmp_path / "watch"
    checkpoints.mkdir()
    given = {"dataset.name": str(write_sums(tmp_path / "sums.jsonl", ROWS)), "output.dir": out}
    config = load_run_config(None, given, [
        "rollout.backend=sglang:d2", f"model.path={tmp_path / 'base'}", "eval.concurrency=4",
        "eval.replays=0", "watch.settle_seconds=0", "watch.poll_interval=0.05",
        "watch.stop_after=5", "watch.max_delay_steps=20", f"watch.probe_size={PROBE}",
        f"watch.check_size={CHECK}",
    ])  # fmt: skip
    for step in (10, 20, 30):
        (checkpoints / f"step-{step}.gguf").write_bytes(b"GGUF")
    watching = asyncio.create_task(watch(plan(config, False), checkpoints, QuietObserver()))
    await eventually(lambda: len(decisions(out)) == 3, 120)
    for worker in workers:
        worker.behavior.update({"wrong_above_temperature": -1.0})  # every answer wrong now
    (checkpoints / "step-40.gguf").write_bytes(b"GGUF")
    await eventually(lambda: len(decisions(out)) == 4, 120)
    for worker in workers:
        worker.behavior.update({"wrong_above_temperature": None})  # right again: a recovery
    (checkpoints / "step-50.gguf").write_bytes(b"GGUF")
    assert await asyncio.wait_for(watching, 120) == 5

    first, steady, check, collapse, recovered = decisions(out)
    assert [d["reason"] for d in (first, steady, check, collapse)] == [
        "first", "none", "cleared", "change",
    ]  # fmt: skip
    assert "probe" not in first and first["full"]["accuracy"]["value"] == 1.0
    # The same answers as the reference: nothing is known, so the probe plays all it may.
    assert steady["comparisons"]["reference"]["verdict"] == "not yet known"
    assert steady["probe"]["attempts"] == PROBE and not steady["fired"]
    # 20 steps after the evaluation the check rules out a change of 0.1 before its 100 samples.
    reference = check["comparisons"]["reference"]
    assert check["check"] and reference["high"] < 0.1 and reference["low"] > -0.1
    # Attempts in flight when it stopped, and later samples that landed before an earlier one
    # (outcomes are told in the probe's order), are kept but count for nothing.
    assert reference["pairs"] <= check["probe"]["attempts"] < CHECK
    # Every answer wrong: a few samples say "worse" with the evidence, the probe stops there.
    found = collapse["comparisons"]["reference"]
    assert (found["verdict"], collapse["fired"]) == ("worse", True)
    assert found["evidence"] >= 1 / found["alpha"] and found["high"] < 0
    assert found["pairs"] <= collapse["probe"]["attempts"] < PROBE
    assert collapse["full"]["accuracy"]["value"] == 0.0
    # The full evaluation keeps the probe's attempts and plays only the other samples.
    probed, full = (_records(out / "step-40" / part) for part in ("probe", "full"))
    assert probed and all(full[sample] == kept for sample, kept in probed.items())
    assert len(full) == collapse["full"]["attempts"] == ROWS
    saved = json.loads((out / "trigger.json").read_text())
    assert saved["last_step"] == 50 and saved["trigger"]["waiting_since"] == 50

    shown = CliRunner().invoke(app, ["report", str(out)])
    assert shown.exit_code == 0, shown.output
    assert "worse -1.000" in shown.output and "cleared" in shown.output
    # Evaluations at 10, 40 and 50 and the check at 30: enough points for a forecast to draw.
    assert collapse["forecast"] is None and recovered["reason"] == "change"
    assert recovered["forecast"]["steps"][0] == 52
    assert '<figure id="forecast"><svg' in (out / "report.html").read_text()


def _records(run_dir: Path) -> dict[str, dict[str, object]]:
    lines = (run_dir / "samples.jsonl").read_bytes().splitlines()
    return {record["sample_id"]: record for record in map(orjson.loads, lines)}


def test_outcomes_reach_the_probe_in_its_order_not_as_they_finish() -> None:
    probe = Probe(10, ["a", "b", "c", "d"], False, {"reference": dict.fromkeys("abcd", 1.0)},
                  0.1, 0.05)  # fmt: skip
    told: list[str] = []
    real_add = probe.add

    def add(sample_id: str, outcome: float) -> bool:
        told.append(sample_id)
        return real_add(sample_id, outcome)

    probe.add = add  # type: ignore[method-assign]
    outcomes = Outcomes(probe, attempts=2)
    finished = [("c", True), ("b", False), ("c", True), ("a", True), ("b", True), ("a", False)]
    for sample, correct in finished:
        outcomes.take(AttemptRecord.from_line(orjson.dumps(record(sample, 0, correct)), "test"))
    # c finished first but waits for a and b; d never came.
    assert told == ["a", "b", "c"]
    assert probe.played == 3 and probe.score == pytest.approx((0.5 + 0.5 + 1.0) / 3)
