"""`agent-eval export RUN --format atif`: a run the engine played over the mock worker, each
attempt one ATIF file that the ATIF models accept and that says what the record says; and the
same run as SFT lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_eval import __version__
from agent_eval.agents.math_calculator import MathCalculatorAgent
from agent_eval.cli import app
from agent_eval.data import load_dataset
from agent_eval.results.exports.atif import EXTENSION, from_atif, record_attempt, to_atif
from agent_eval.results.exports.atif_models import SCHEMA_VERSION, Trajectory
from agent_eval.results.files import SAMPLES, RunDirectory
from agent_eval.results.messages import messages
from agent_eval.results.record import AttemptRecord
from agent_eval.rewards import RewardScorer
from agent_eval.run.config import RunConfig, save_run_config
from agent_eval.run.engine import Engine
from agent_eval.run.parts import engine_config
from tests.helpers.program_records import THOUGHT, program_record
from tests.helpers.proxy import MakeClient, StartProxy, StartWorkers

SETTINGS = {
    "agent": {"name": "math_calculator"},
    "model": {"name": "mock-model"},
    "eval": {"n_samples": 2, "concurrency": 2, "replays": 0},
}


@pytest.fixture
async def run_dir(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient, tmp_path: Path
) -> Path:
    """Three gsm8k_mini samples played twice each by the calculator agent over the mock worker
    (a calculator call, then the answer), with the run's config.yaml."""
    (worker,) = await start_workers(1)
    worker.behavior.two_step = True
    client = make_client(await start_proxy([worker]))
    config = RunConfig.model_validate(SETTINGS)
    items = list(load_dataset("gsm8k_mini", limit=3))
    path = tmp_path / "run"
    async with RewardScorer(max_workers=1) as scorer:
        engine = Engine(MathCalculatorAgent(), scorer, client, engine_config(config, "mock-model"))
        await engine.run(items, RunDirectory(path), total=len(items))
    save_run_config(config, path)
    return path


def export(*args: str) -> Any:
    return CliRunner().invoke(app, ["export", *args], env={"COLUMNS": "200"})


def exported(folder: Path) -> dict[str, dict[str, Any]]:
    return {path.name: json.loads(path.read_text()) for path in sorted(folder.iterdir())}


async def test_each_attempt_is_one_valid_atif_file_that_says_what_its_record_says(
    run_dir: Path,
) -> None:
    result = export(str(run_dir))
    assert result.exit_code == 0, result.output
    records = list(RunDirectory(run_dir).records())
    files = exported(run_dir / "atif")
    assert sorted(files) == sorted(f"{r.sample_id}.{r.attempt}.json" for r in records)
    assert f"Wrote 6 atif files to {run_dir / 'atif'}" in result.output
    for record in records:
        document = files[f"{record.sample_id}.{record.attempt}.json"]
        assert Trajectory.model_validate(document).to_json() == document
        said_as_recorded(document, record)


async def test_sft_lines_say_what_the_engine_recorded_and_rl_needs_token_ids(
    run_dir: Path,
) -> None:
    result = export(str(run_dir), "--format", "sft")
    assert result.exit_code == 0, result.output
    records = list(RunDirectory(run_dir).records())
    lines = [json.loads(line) for line in (run_dir / "sft.jsonl").read_text().splitlines()]
    assert len(lines) == len(records) == 6
    for line, record in zip(lines, records, strict=True):
        trajectory = record.trajectory
        system, user, called, output, answer = line["messages"]
        assert system == {"role": "system", "content": trajectory["setups"][0]["system_prompt"]}
        assert user == {"role": "user", "content": trajectory["messages"][0]["content"]}
        (call,) = called["tool_calls"]
        recorded = trajectory["tool_calls"][0]
        assert (call["function"]["name"], json.loads(call["function"]["arguments"])) == (
            recorded["name"], json.loads(recorded["arguments"]),
        )  # fmt: skip
        assert output == {"role": "tool", "content": recorded["result"], "tool_call_id": call["id"]}
        assert answer == {"role": "assistant", "content": trajectory["final_output"]}
        names = [tool["function"]["name"] for tool in line["tools"]]
        assert names == [tool["name"] for tool in trajectory["setups"][0]["tools"]]
    rl = export(str(run_dir), "--format", "rl")
    assert rl.exit_code == 2 and "6 attempts without token ids" in rl.output
    assert not (run_dir / "rl.jsonl").exists()


def said_as_recorded(document: dict[str, Any], record: AttemptRecord) -> None:
    """The document's root, steps, metrics and extension against the record's own fields."""
    trajectory = record.trajectory
    assert document["schema_version"] == SCHEMA_VERSION
    assert document["session_id"] == record.session_id
    agent = document["agent"]
    assert (agent["name"], agent["version"], agent["model_name"]) == (
        "math_calculator", __version__, "mock-model",
    )  # fmt: skip
    tools = [tool["function"]["name"] for tool in agent["tool_definitions"]]
    assert tools == [tool["name"] for tool in trajectory["setups"][0]["tools"]]
    system, user, *agents = document["steps"]
    assert system == {"step_id": 1, "source": "system",
                      "message": trajectory["setups"][0]["system_prompt"]}  # fmt: skip
    assert user["source"] == "user" and user["message"] == trajectory["messages"][0]["content"]
    assert [step["source"] for step in agents] == ["agent"] * len(trajectory["model_calls"])
    call_step, answer_step = agents
    (call,) = call_step["tool_calls"]
    (result,) = call_step["observation"]["results"]
    assert (call["function_name"], json.dumps(call["arguments"], separators=(",", ":"))) == (
        trajectory["tool_calls"][0]["name"], trajectory["tool_calls"][0]["arguments"],
    )  # fmt: skip
    assert result == {"source_call_id": call["tool_call_id"],
                      "content": trajectory["tool_calls"][0]["result"]}  # fmt: skip
    assert answer_step["message"] == [{"type": "text", "text": trajectory["final_output"]}]
    for step, model_call in zip(agents, trajectory["model_calls"], strict=True):
        metrics = step["metrics"]
        assert metrics["prompt_tokens"] == model_call["prompt_tokens"]
        assert metrics["completion_tokens"] == model_call["completion_tokens"]
        assert metrics["extra"][EXTENSION]["worker"] == model_call["worker"]
        assert metrics["extra"][EXTENSION]["latency_s"] == model_call["latency_s"]
    assert document["final_metrics"] == {
        "total_prompt_tokens": record.prompt_tokens,
        "total_completion_tokens": record.completion_tokens,
    }
    ours = document["extra"][EXTENSION]
    assert (ours["sample_id"], ours["attempt"], ours["reward"], ours["answer"]) == (
        record.sample_id, record.attempt, record.reward, record.answer,
    )  # fmt: skip
    assert ours["model_calls"] == len(trajectory["model_calls"])
    rest = {
        key: trajectory[key]
        for key in ("final_output", "error", "replays", "turn_outputs", "program")
    }
    assert ours["trajectory"] == rest


async def test_an_export_reads_back_as_the_record_s_trajectory(run_dir: Path) -> None:
    assert export(str(run_dir), "-o", str(run_dir.parent / "out")).exit_code == 0
    for record in RunDirectory(run_dir).records():
        path = run_dir.parent / "out" / f"{record.sample_id}.{record.attempt}.json"
        back = from_atif(Trajectory.model_validate_json(path.read_text()))
        assert back.session_id == record.session_id
        trajectory = back.trajectory
        assert [given(c) for c in trajectory["model_calls"]] == [
            given(c) for c in record.trajectory["model_calls"]
        ]
        assert [
            (c["name"], json.loads(c["arguments"]), c["result"]) for c in trajectory["tool_calls"]
        ] == [
            (c["name"], json.loads(c["arguments"]), c["result"])
            for c in record.trajectory["tool_calls"]
        ]
        roles = [
            (m.role, [c.id for c in m.tool_calls], m.call_id)
            for m in messages(trajectory["messages"])
        ]
        assert roles[0][0] == "system"
        assert roles[1:] == [(m.role, [c.id for c in m.tool_calls], m.call_id)
                             for m in messages(record.trajectory["messages"])]  # fmt: skip
        assert trajectory["final_output"] == record.trajectory["final_output"]


def given(call: dict[str, Any]) -> dict[str, Any]:
    """A model call's fields that were given (an unreported count is absent, not None)."""
    return {key: value for key, value in call.items() if value is not None}


async def test_file_names_from_sample_ids_stay_in_the_folder(run_dir: Path, tmp_path: Path) -> None:
    (line, *_) = (run_dir / SAMPLES).read_bytes().splitlines(keepends=True)
    hostile = tmp_path / "hostile"
    hostile.mkdir()
    record = json.loads(line)
    names = ["../../escape", "/etc/passwd", ".hidden", "a b/c"]
    (hostile / SAMPLES).write_text(
        "".join(json.dumps({**record, "sample_id": name}) + "\n" for name in names)
    )
    assert export(str(hostile)).exit_code == 0
    written = sorted((hostile / "atif").iterdir())
    assert len(written) == len(names)
    assert all(
        path.parent == hostile / "atif" and not path.name.startswith(".") for path in written
    )
    assert not list(hostile.parent.glob("escape*")) and not list(hostile.glob("*.partial"))


async def test_a_torn_last_line_is_left_out_with_a_note(run_dir: Path) -> None:
    with (run_dir / SAMPLES).open("ab") as handle:
        handle.write(b'{"sample_id": "cut off mid-wr')
    result = export(str(run_dir))
    assert result.exit_code == 0
    assert "was cut off mid-write and is left out" in result.output
    assert len(list((run_dir / "atif").iterdir())) == 6


def test_a_mistake_is_one_message_and_nothing_is_written(tmp_path: Path) -> None:
    (tmp_path / "not-a-run").mkdir()
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / SAMPLES).write_text('{"sample_id": "q1"}\nnot json\n')
    cases = [
        ([str(tmp_path / "missing")], "is not a folder; pass a run directory"),
        ([str(tmp_path / "not-a-run")], "holds no samples.jsonl: not a run directory"),
        ([str(corrupt)], "samples.jsonl line 1 is not an attempt record"),
        ([str(corrupt), "-f", "csv"], "unknown export format 'csv'; the known ones: atif, sft"),
    ]
    for args, said in cases:
        result = export(*args)
        assert result.exit_code == 2, (args, result.output)
        assert said in result.output and "Traceback" not in result.output
    assert not (tmp_path / "missing").exists() and not (tmp_path / "not-a-run" / "atif").exists()


def test_a_command_attempt_exports_its_anthropic_calls_and_its_program() -> None:
    line = program_record("q1", 0)
    record = AttemptRecord.from_line(json.dumps(line).encode(), "a command attempt")
    document = to_atif(record_attempt(record, "command", "mock-model"))
    assert Trajectory.model_validate(document.to_json()) == document
    user, called, answered = (step.model_dump(exclude_none=True) for step in document.steps)
    assert user == {
        "step_id": 1,
        "source": "user",
        "message": line["trajectory"]["messages"][0]["content"],
    }
    assert called["message"] == [{"type": "text", "text": "Let me multiply."}]
    assert called["reasoning_content"] == THOUGHT
    assert called["tool_calls"] == [
        {"tool_call_id": "tu_1", "function_name": "multiply", "arguments": {"a": 16, "b": 3}}
    ]
    assert called["observation"] == {"results": [{"source_call_id": "tu_1", "content": "48.0"}]}
    assert called["metrics"]["extra"][EXTENSION]["worker"] == "w0"
    assert answered["message"] == [{"type": "text", "text": "48"}]
    assert answered["metrics"]["extra"][EXTENSION]["worker"] == "w1"
    assert document.extra is not None
    assert document.extra[EXTENSION]["trajectory"]["program"] == line["trajectory"]["program"]
    assert from_atif(document).trajectory["program"] == line["trajectory"]["program"]


def test_an_attempt_that_said_nothing_is_one_system_step_saying_why() -> None:
    line = program_record("q1", 0)
    line["trajectory"].update(messages=[], model_calls=[], tool_calls=[])
    line["error"] = line["trajectory"]["error"] = {
        "kind": "runner_error",
        "message": "no such file",
    }
    record = AttemptRecord.from_line(json.dumps(line).encode(), "a failed attempt")
    (step,) = to_atif(record_attempt(record, "command", None)).steps
    assert (step.source, step.message) == (
        "system", "no message was recorded: it ended with runner_error: no such file",
    )  # fmt: skip


def test_a_folder_that_cannot_be_written_is_one_message(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / SAMPLES).write_text(json.dumps(program_record("q1", 0)) + "\n")
    (tmp_path / "a-file").write_text("")
    result = export(str(run), "-o", str(tmp_path / "a-file" / "atif"))
    assert result.exit_code == 4, result.output
    assert "cannot write" in result.output and "Traceback" not in result.output
    assert export(str(run)).exit_code == 0
    assert [path.name for path in (run / "atif").iterdir()] == ["q1.0.json"]


def test_reasoning_items_join_the_answer_they_precede() -> None:
    """Responses reasoning items (as the Agents SDK records a reasoning model's) are the next
    agent step's reasoning, not steps of their own: each model call keeps its step."""
    line = program_record("q1", 0)
    thought = {"type": "reasoning", "id": "rs_1", "summary": [],
               "content": [{"type": "reasoning_text", "text": "16 times 3"}]}  # fmt: skip
    answer = [{"type": "output_text", "text": "48"}]
    line["trajectory"]["messages"] = [
        {"role": "developer", "content": "Use the tools."},
        {"role": "user", "content": "16 * 3?"},
        thought,
        {"type": "function_call", "call_id": "c1", "name": "multiply", "arguments": "[16, 3]"},
        {"type": "function_call_output", "call_id": "c1", "output": "48.0"},
        {"type": "message", "role": "assistant", "content": answer},
    ]
    record = AttemptRecord.from_line(json.dumps(line).encode(), "a reasoning attempt")
    steps = to_atif(record_attempt(record, "math_calculator", None)).to_json()["steps"]
    assert [step["source"] for step in steps] == ["system", "user", "agent", "agent"]
    assert steps[2]["reasoning_content"] == "16 times 3"
    assert steps[2]["tool_calls"][0]["arguments"] == {"input": "[16, 3]"}
    workers = [step["metrics"]["extra"][EXTENSION]["worker"] for step in steps[2:]]
    assert workers == ["w0", "w1"]
