"""The samples.jsonl line: one AttemptRecord written and read back, old and newer versions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_eval.agents.trajectory import (
    ModelCallRecord,
    ModelSetup,
    ToolDefinition,
    Trajectory,
    TrajectoryError,
)
from agent_eval.data import Sample
from agent_eval.errors import ConfigError
from agent_eval.results.files import RunDirectory
from agent_eval.results.record import SCHEMA, AttemptRecord
from agent_eval.run.engine import attempt_record
from agent_eval.run.scoring import Scored
from tests.helpers.injections import dojo
from tests.helpers.records import OLD_LINE, session_record

# A line as agent-eval wrote it before lines carried their schema: version 1.
ADDED = ("variant_of", "perturbation", "benchmark")
"""Keys written since OLD_LINE's version, each with a default a line without it reads as."""


def test_a_record_round_trips_through_its_line() -> None:
    record = session_record()
    line = record.to_line()
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert AttemptRecord.from_line(line, "here") == record


def test_a_benchmark_s_findings_go_from_the_score_to_the_line_and_back() -> None:
    found = dojo(attack="important_instructions", utility=False, security=True)
    scored = Scored(0.0, False, None, None, None, failure=None, benchmark=found)
    trajectory = Trajectory(final_output="Done.")
    record = attempt_record(
        Sample("t", "Pay the bill.", "{}"), 0, 1, "t-0", trajectory, scored, 0.5
    )
    line = json.loads(record.to_line())
    assert line["benchmark"] == found and list(line)[-2:] == ["benchmark", "trajectory"]
    assert AttemptRecord.from_line(record.to_line(), "here").score().benchmark == found


def test_the_line_keeps_the_keys_other_tools_read_plus_the_schema() -> None:
    data = json.loads(session_record().to_line())
    assert data.pop("schema") == SCHEMA == 3
    # Keys added since keep the schema: a reader by key that does not know them leaves them out.
    assert data.keys() == {*json.loads(OLD_LINE).keys(), *ADDED}
    assert all(data[key] is None for key in ADDED)
    assert data["error"] is None and data["trajectory"]["error"] is None


def test_the_line_puts_its_schema_first_and_its_trajectory_last() -> None:
    """A reader of the file sees the version, and every short field, before the long trajectory."""
    keys = list(json.loads(session_record().to_line()))
    assert (keys[0], keys[-1]) == ("schema", "trajectory")


def test_the_score_is_the_record_without_its_trajectory() -> None:
    record = session_record()
    score = record.score()
    shared = {name: value for name, value in vars(record).items() if name != "trajectory"}
    assert {name: getattr(score, name) for name in shared} == shared
    assert not hasattr(score, "trajectory")


def test_a_line_without_a_schema_is_read_as_version_1() -> None:
    record = AttemptRecord.from_line(OLD_LINE, "here")
    assert (record.sample_id, record.error_kind, record.scored) == ("q1", "timeout", False)
    # Version 1 wrote the score of an attempt it did not score: read, it has none.
    assert (record.reward, record.correct, record.score().correct) == (None, None, None)
    assert (record.variant_of, record.perturbation) == (None, None)  # added since, defaulted
    unscored = dict.fromkeys(("reward", "correct", "turn_rewards"))
    rewritten = {**json.loads(OLD_LINE), **dict.fromkeys(ADDED), **unscored, "schema": SCHEMA}
    assert json.loads(record.to_line()) == rewritten


def test_a_scored_line_of_version_1_reads_as_written() -> None:
    scored = OLD_LINE.replace(b'{"kind":"timeout","message":"late"}', b"null")
    record = AttemptRecord.from_line(b'{"schema":1,' + scored[1:], "here")
    assert (record.reward, record.correct, record.answer, record.scored) == (1.0, True, "42", True)


# A line of version 2, whose trajectory kept its earlier plays under `retries`.
REPLAYED = {"kind": "upstream_error", "class": "infra", "session_id": "q1-0", "latency_s": 0.1}
V2_LINE = OLD_LINE.replace(b'{"sample_id"', b'{"schema":2,"sample_id"').replace(
    b'"trajectory":{"messages":[],',
    b'"trajectory":{"messages":[],"retries":[%s],' % json.dumps(REPLAYED).encode(),
)


def test_the_earlier_plays_of_lines_before_version_3_read_as_replays() -> None:
    record = AttemptRecord.from_line(V2_LINE, "here")
    assert list(record.trajectory) == ["messages", "replays", "error"]
    assert record.trajectory["replays"] == [REPLAYED]
    assert json.loads(record.to_line())["trajectory"]["replays"] == [REPLAYED]


def test_calls_given_the_same_prompt_and_tools_keep_them_once() -> None:
    add = ToolDefinition("add", "Add two numbers: a + b.", {"type": "object", "required": ["a"]})
    trajectory = Trajectory()
    for prompt in ("Solve it with the tools.", "Solve it with the tools.", "Check your answer."):
        setup = trajectory.setup_index(ModelSetup(prompt, [add]))
        trajectory.model_calls.append(ModelCallRecord(0.1, setup=setup))
    scores = Scored(1.0, True, "42", None, None, failure=None)
    item = Sample("q1", "6*7?", "#### 42")
    record = attempt_record(item, 0, 1, "q1-0", trajectory, scores, 0.3)
    line = record.to_line()
    assert line.count(b"Solve it with the tools.") == 1 and line.count(b"a + b") == 2
    recorded = json.loads(line)["trajectory"]
    assert [call["setup"] for call in recorded["model_calls"]] == [0, 0, 1]
    assert recorded["setups"][0] == {
        "system_prompt": "Solve it with the tools.",
        "tools": [{"name": "add", "description": "Add two numbers: a + b.", "parameters": {
            "type": "object", "required": ["a"]}}],
    }  # fmt: skip
    assert AttemptRecord.from_line(line, "here") == record


@pytest.mark.parametrize(
    ("error", "score"),
    [
        (None, (0.5, False, [1.0, 0.0])),
        (TrajectoryError("max_turns", "the model's own failure"), (0.5, False, [1.0, 0.0])),
        (TrajectoryError("upstream_error", "502"), (None, None, None)),
        (TrajectoryError("a_third_party_kind", "unknown: infra"), (None, None, None)),
    ],
)
def test_only_a_scored_attempt_writes_a_score(
    error: TrajectoryError | None, score: tuple[object, ...]
) -> None:
    data = json.loads(session_record(error).to_line())
    assert (data["reward"], data["correct"], data["turn_rewards"]) == score
    # What the model said stays, scored or not: it is no verdict.
    assert (data["answer"], data["turn_answers"]) == ("41", ["42", "41"])


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (OLD_LINE.replace(b'{"sample_id"', b'{"schema":4,"sample_id"'), "has record schema 4"),
        (b'{"schema":"x"}\n', "has record schema 'x'"),
        (b"[1, 2]\n", "is not an attempt record"),
        (OLD_LINE.replace(b'"seed":7,', b""), "is not an attempt record (it lacks 'seed')"),
        (b"{oops\n", "is not valid JSON"),
    ],
)
def test_a_newer_or_corrupt_line_names_its_file_and_line(
    tmp_path: Path, line: bytes, message: str
) -> None:
    run_dir = RunDirectory(tmp_path)
    run_dir.samples.write_bytes(OLD_LINE + line)
    with pytest.raises(ConfigError, match=r"samples\.jsonl line 2") as error:
        list(run_dir.records())
    assert message in str(error.value)


def test_a_torn_last_line_is_no_attempt(tmp_path: Path) -> None:
    run_dir = RunDirectory(tmp_path)
    run_dir.samples.write_bytes(OLD_LINE + OLD_LINE[:40])
    torn: list[str] = []
    assert [r.sample_id for r in run_dir.records(on_torn=torn.append)] == ["q1"]
    assert torn == [f"{run_dir.samples} line 2"]
