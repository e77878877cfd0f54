"""Data files `agent-eval run` refuses before anything is played (issue 28, items 9 and 10).

A row whose id another row has, or whose attempts could only ever score 0 (a blank question, no
gold the reward can read), ends the run at once: exit 2, one message naming the file, the line
and what to do, no run directory, not one request to the worker.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from agent_eval.data.errors import DataError
from agent_eval.run.config import load_run_config
from agent_eval.run.evaluation import plan
from tests.helpers.cli_runs import agent_eval, finish
from tests.helpers.proxy import StartWorkers

# A problem whose worked solution the `numbers` perturbation replays: it gets a variant.
REPLAYABLE = {
    "question": "Tom has 3 apples and buys 4 more. How many?",
    "answer": "3+4=<<3+4=7>>7\n#### 7",
}
TURNS = [{"user": "What is 2 + 2?", "expected": "4"}, {"user": "Are you sure?", "challenge": True}]


def qa(sample_id: str | None = None, **fields: str) -> dict[str, object]:
    """A good single-question row, changed by `fields`."""
    row: dict[str, object] = {"question": "Say 7", "answer": "#### 7", **fields}
    return row if sample_id is None else {"id": sample_id, **row}


CASES = {
    "duplicate-id": (
        ["--dataset", "rows.jsonl"],
        [qa("a"), qa("b"), qa("a")],
        "rows.jsonl line 3: id 'a' is already the id of rows.jsonl line 1; give each row an id",
    ),
    "duplicate-default-id": (
        ["--dataset", "gsm8k", "--data-file", "rows.jsonl"],
        [qa(), qa("gsm8k-1")],
        "rows.jsonl line 2: id 'gsm8k-1' is already the id of rows.jsonl line 1;",
    ),
    "duplicate-session-id": (
        ["--agent", "multi_turn_chat", "--dataset", "sessions", "--data-file", "rows.jsonl"],
        [{"id": "s", "turns": TURNS}, {"id": "s", "turns": TURNS}],
        "rows.jsonl line 2: id 's' is already the id of rows.jsonl line 1;",
    ),
    "variant-id": (
        ["--dataset", "rows.jsonl", "--perturb", "numbers"],
        [{"id": "a~numbers", **REPLAYABLE}, {"id": "a", **REPLAYABLE}],
        "the numbers variant of sample 'a' (rows.jsonl line 2): id 'a~numbers' is already the "
        "id of rows.jsonl line 1; ids ending in '~numbers' are the ids of --perturb's variants",
    ),
    "blank-question": (
        ["--dataset", "rows.jsonl"],
        [qa(), qa(question=" \t")],
        "rows.jsonl line 2: field 'question' is empty or only whitespace",
    ),
    "gsm8k-without-marker": (
        ["--dataset", "gsm8k", "--data-file", "rows.jsonl"],
        [qa(), qa(answer="3 + 4 = 7 apples")],
        "rows.jsonl line 2: field 'answer' has no '####'",
    ),
    "unreadable-gold": (
        ["--dataset", "rows.jsonl"],
        [qa(), qa(answer="#### ???")],
        "rows.jsonl line 2: the reward cannot read the gold answer '???' of field 'answer'",
    ),
    "turn-without-expected": (
        ["--agent", "multi_turn_chat", "--dataset", "sessions", "--data-file", "rows.jsonl"],
        [{"turns": TURNS}, {"turns": [*TURNS, {"user": "And times 3?"}]}],
        "rows.jsonl line 2: field 'turns[2]' needs 'expected'",
    ),
}


@pytest.mark.parametrize(("args", "rows", "refusal"), CASES.values(), ids=CASES.keys())
async def test_a_data_file_that_cannot_be_played_right_is_refused_before_anything_runs(
    start_workers: StartWorkers,
    tmp_path: Path,
    args: list[str],
    rows: list[dict[str, object]],
    refusal: str,
) -> None:
    (worker,) = await start_workers(1)
    (tmp_path / "rows.jsonl").write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    command = ["run", *args, "--endpoint", worker.url, "-o", "run"]  # math_calculator unless told
    code, out, err = await finish(await agent_eval(*command, cwd=tmp_path), 60)
    assert code == 2, out + err
    assert f"error: {refusal}" in " ".join(err.split()), err
    assert "Traceback" not in out + err
    assert not (tmp_path / "run").exists()
    assert worker.stats.generation_requests == 0


def test_a_data_mistake_is_told_before_the_runner_is_loaded(tmp_path: Path) -> None:
    # An agent that cannot load would be the first mistake told if the runner came first;
    # loading it first would also cost a refused run its framework's import.
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in (qa(), qa(question=" "))))
    given = {"dataset.name": str(rows), "agent.name": "tests.no_such_module:Agent"}
    config = load_run_config(
        None, given, ["rollout.endpoints=[http://127.0.0.1:9]", "output.dir=x"]
    )
    with pytest.raises(DataError, match="field 'question' is empty"):
        plan(config)
