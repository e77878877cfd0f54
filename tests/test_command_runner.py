"""The `command` runner with real programs: answers, environment, files, checks, limits, ends."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from agent_eval.agents import load_runner
from agent_eval.agents.program_env import anchored, render
from agent_eval.agents.trajectory import Trajectory
from agent_eval.data import Sample
from agent_eval.data.errors import DataError
from agent_eval.data.records import Origin
from agent_eval.data.rows import RawRow, parse_row
from agent_eval.errors import ConfigError
from agent_eval.rewards.check import check_score
from agent_eval.run.scoring import checked
from tests.helpers.programs import KEY, agent_script, context, python_command, running
from tests.helpers.waits import eventually

SAMPLE = Sample("s1", "What's 6 x 7?", "#### 42")


async def play(
    sample: Sample = SAMPLE, run_dir: Path | None = None, **options: object
) -> Trajectory:
    runner = load_runner("command", **options)
    return await runner.run(sample, context(run_dir=run_dir))


def program(trajectory: Trajectory) -> dict:
    return trajectory.to_dict()["program"]


async def test_the_answer_is_the_last_non_empty_line_of_stdout(tmp_path: Path) -> None:
    script = agent_script(tmp_path, "print('thinking...')\nprint('42')\nprint()\nprint('  ')\n")
    trajectory = await play(cmd=python_command(script))
    assert trajectory.error is None and trajectory.final_output == "42"
    recorded = program(trajectory)
    assert (recorded["exit_code"], recorded["signal"], recorded["answer_source"]) == (
        0,
        None,
        "stdout",
    )


async def test_the_answer_may_come_from_a_file_the_program_writes(tmp_path: Path) -> None:
    body = (
        "open(os.environ['AGENT_EVAL_ANSWER_FILE'], 'w').write('41 + 1 = 42\\n')\nprint('done')\n"
    )
    trajectory = await play(cmd=python_command(agent_script(tmp_path, body)), answer="file")
    assert trajectory.final_output == "41 + 1 = 42"
    assert program(trajectory)["answer_source"] == "answer.txt"


ECHO = """
names = ["OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY",
         "AGENT_EVAL_MODEL", "OPENAI_MODEL", "ANTHROPIC_MODEL", "AGENT_EVAL_SAMPLE_FILE",
         "AGENT_EVAL_WORKDIR", "AGENT_EVAL_ANSWER_FILE", "AGENT_EVAL_ADMIN_TOKEN",
         "AGENT_EVAL_API_KEY", "EXTRA", "PATH"]
seen = {"env": {n: os.environ.get(n) for n in names}, "argv": sys.argv[1:], "cwd": os.getcwd(),
        "stdin": json.loads(sys.stdin.read() or "null"),
        "file": json.load(open(os.environ["AGENT_EVAL_SAMPLE_FILE"]))}
print(json.dumps(seen))
"""


async def test_the_program_sees_the_proxy_its_sample_and_the_template_fields(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("AGENT_EVAL_ADMIN_TOKEN", "admin-secret")
    monkeypatch.setenv("AGENT_EVAL_API_KEY", "harness-secret")
    fields = "{question} {id} {workdir} {sample_file} {answer_file} {model}"
    cmd = python_command(agent_script(tmp_path, ECHO), fields, f"--key {KEY}")
    with caplog.at_level(logging.DEBUG):
        trajectory = await play(cmd=cmd, env={"EXTRA": "x y"})
    seen = json.loads(str(trajectory.final_output))
    env, (question, sample_id, workdir, sample_file, answer_file, model, *_) = (
        seen["env"],
        seen["argv"],
    )
    assert env["OPENAI_BASE_URL"] == "http://127.0.0.1:9/v1"
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9"  # the anthropic SDK adds /v1/messages
    assert env["OPENAI_API_KEY"] == env["ANTHROPIC_API_KEY"] == KEY
    assert (
        env["AGENT_EVAL_MODEL"]
        == env["OPENAI_MODEL"]
        == env["ANTHROPIC_MODEL"]
        == model
        == "mock-model"
    )
    assert env["AGENT_EVAL_ADMIN_TOKEN"] is None and env["AGENT_EVAL_API_KEY"] is None
    assert env["EXTRA"] == "x y" and env["PATH"]
    assert (question, sample_id) == (SAMPLE.question, "s1")  # quoted: one argument each
    assert workdir == env["AGENT_EVAL_WORKDIR"] == seen["cwd"]
    assert answer_file == env["AGENT_EVAL_ANSWER_FILE"] == str(Path(workdir) / "answer.txt")
    assert (
        sample_file == env["AGENT_EVAL_SAMPLE_FILE"]
        and Path(sample_file).parent == Path(workdir).parent
    )
    # The sample on stdin and in its file, without its gold answer.
    assert seen["stdin"] == seen["file"] == {
        "id": "s1", "question": SAMPLE.question, "messages": None, "metadata": {}, "files": []
    }  # fmt: skip
    assert not Path(workdir).parent.exists()  # removed after the attempt
    recorded = json.dumps(program(trajectory))
    assert KEY not in recorded and "--key ***" in recorded  # command and output tails alike
    assert KEY not in caplog.text and "admin-secret" not in caplog.text


async def test_stdin_may_be_left_closed(tmp_path: Path) -> None:
    body = "print(repr(sys.stdin.read()))\n"
    trajectory = await play(cmd=python_command(agent_script(tmp_path, body)), stdin=False)
    assert trajectory.final_output == "''"


async def test_an_argv_list_gets_its_fields_unquoted(tmp_path: Path) -> None:
    script = agent_script(tmp_path, "print(json.dumps(sys.argv[1:]))\n")
    trajectory = await play(cmd=[sys.executable, str(script), "{question}", "id={id}"])
    assert json.loads(str(trajectory.final_output)) == [SAMPLE.question, "id=s1"]


EDIT = """
text = open("src/calc.py").read()
open("src/calc.py", "w").write(text.replace("x = 1", "x = 2"))
open("notes.txt", "w").write("fixed it\\n")
open("blob.bin", "wb").write(b"\\0\\1\\2")
os.remove("README")
print("done")
"""


async def test_the_sample_s_files_are_copied_and_the_program_s_changes_recorded(
    tmp_path: Path,
) -> None:
    files = {"src/calc.py": "x = 1\ny = 3\n", "README": "read me\n"}
    sample = Sample("s2", "fix it", "ok", files=files)
    trajectory = await play(sample, cmd=python_command(agent_script(tmp_path, EDIT)))
    diff = program(trajectory)["diff"]
    assert "--- a/src/calc.py\n+++ b/src/calc.py\n" in diff and "-x = 1\n+x = 2\n" in diff
    assert "+++ b/notes.txt\n" in diff and "+fixed it\n" in diff
    assert "--- a/README\n+++ /dev/null\n" in diff
    assert "Binary or large file blob.bin added" in diff
    assert "sample.json" not in diff


def test_rows_carry_files_and_checks_and_refuse_paths_that_leave_the_directory() -> None:
    origin = Origin("tasks.jsonl", "line", 1)
    row = {"question": "fix", "files": {"a/b.py": "x"}, "check": "pytest -q"}
    sample = parse_row(RawRow(origin, row), "qa", "tasks")
    assert (
        isinstance(sample, Sample)
        and sample.files == {"a/b.py": "x"}
        and sample.check == "pytest -q"
    )
    for name in ("../escape.py", "/etc/passwd", "a\\b", ""):
        with pytest.raises(DataError, match="not a relative path inside the working directory"):
            parse_row(
                RawRow(origin, {"question": "q", "answer": "1", "files": {name: "x"}}), "qa", "t"
            )
    with pytest.raises(DataError, match="unless it carries its own 'check'"):
        parse_row(RawRow(origin, {"question": "q"}), "qa", "t")


@pytest.mark.parametrize(
    ("stdout", "code", "expected"),
    [
        ("all passed\n", 0, (1.0, True, None)),
        ("2 failed\n", 1, (0.0, False, None)),
        ('{"score": 0.5}\n', 0, (0.5, False, None)),
        ('log\n{"score": 0.5, "correct": true}\n\n', 1, (0.5, True, None)),
        ('{"score": 1}\n', 0, (1.0, True, None)),
        ('{"other": 1}\n', 3, (0.0, False, None)),
    ],
)
def test_a_check_s_verdict_is_its_exit_code_or_the_score_it_prints(
    stdout: str, code: int, expected: tuple
) -> None:
    assert check_score(code, stdout) == expected


def test_a_check_printing_an_impossible_score_gives_none() -> None:
    score, correct, error = check_score(0, '{"score": 7}')
    assert (score, correct) == (None, None) and "from 0 to 1" in str(error)


async def test_a_check_command_scores_the_working_directory(tmp_path: Path) -> None:
    body = "open('out.txt', 'w').write('42')\nprint('wrote it')\n"
    cmd = python_command(agent_script(tmp_path, body))
    passing = await play(cmd=cmd, check="grep -q 42 out.txt")
    failing = await play(cmd=cmd, check="grep -q 43 out.txt")
    partial = await play(cmd=cmd, check="""echo '{{"score": 0.25}}'; exit 1""")
    verdicts = [program(t)["check"] for t in (passing, failing, partial)]
    assert [(v["score"], v["correct"], v["exit_code"]) for v in verdicts] == [
        (1.0, True, 0), (0.0, False, 1), (0.25, False, 1)
    ]  # fmt: skip
    scored = checked(verdicts[2], partial.final_output)
    assert (scored.reward, scored.correct, scored.failure) == (0.25, False, None)
    assert "OPENAI_API_KEY" not in verdicts[0]["command"]


async def test_a_row_s_own_check_is_used_in_place_of_the_option_s(tmp_path: Path) -> None:
    sample = Sample("s3", "q", None, check="test -f made")
    cmd = python_command(agent_script(tmp_path, "open('made', 'w')\nprint(1)\n"))
    trajectory = await play(sample, cmd=cmd, check="false")
    assert program(trajectory)["check"]["command"] == "test -f made"
    assert program(trajectory)["check"]["score"] == 1.0


async def test_the_check_does_not_get_the_proxy_key(tmp_path: Path) -> None:
    cmd = python_command(agent_script(tmp_path, "print(1)\n"))
    trajectory = await play(
        cmd=cmd, check='test -z "$OPENAI_API_KEY" && test -n "$OPENAI_BASE_URL"'
    )
    assert program(trajectory)["check"]["score"] == 1.0


@pytest.mark.parametrize(
    ("check", "why"),
    [("sleep 30", "ran past its 1 s limit"), ("no-such-check-xyz", "could not run the check")],
)
async def test_a_check_that_fails_itself_is_the_harness_s_failure(
    tmp_path: Path, check: str, why: str
) -> None:
    cmd = python_command(agent_script(tmp_path, "print(1)\n"))
    trajectory = await play(cmd=cmd, check=check, check_timeout_s=1)
    error = trajectory.to_dict()["error"]
    assert (error["kind"], error["class"]) == ("scorer_error", "infra") and why in error["message"]
    failure = checked(program(trajectory)["check"], "1").failure
    assert failure is not None and failure.kind == "scorer_error"


async def test_a_crash_is_the_agent_s_error_with_its_exit_code_and_stderr(tmp_path: Path) -> None:
    body = "print('partial', flush=True)\nsys.stderr.write('Traceback: boom\\n')\nsys.exit(3)\n"
    trajectory = await play(cmd=python_command(agent_script(tmp_path, body)), answer="file")
    error, recorded = trajectory.to_dict()["error"], program(trajectory)
    assert (error["kind"], error["class"]) == ("agent_error", "model")
    assert "exited with code 3" in error["message"] and "boom" in error["message"]
    assert recorded["exit_code"] == 3 and "Traceback: boom" in recorded["stderr_tail"]
    assert trajectory.final_output is None


async def test_an_answer_counts_however_noisy_or_failing_the_program(tmp_path: Path) -> None:
    body = "sys.stderr.write('warning\\n' * 1000)\nprint('42')\nsys.exit(1)\n"
    trajectory = await play(cmd=python_command(agent_script(tmp_path, body)))
    assert trajectory.error is None and trajectory.final_output == "42"
    assert program(trajectory)["exit_code"] == 1


@pytest.mark.parametrize(
    "cmd", [["/nowhere/agent-xyz", "{question}"], "agent-xyz-not-installed {question}"]
)
async def test_a_command_that_does_not_exist_is_an_infra_error_naming_it(cmd: object) -> None:
    trajectory = await play(cmd=cmd)
    error = trajectory.to_dict()["error"]
    assert (error["kind"], error["class"]) == ("runner_error", "infra")
    assert "agent-xyz" in error["message"] and "agent.options.cmd" in error["message"]


async def test_output_is_kept_as_bounded_tails(tmp_path: Path) -> None:
    body = "for _ in range(200_000): sys.stdout.write('y' * 99 + '\\n')\n"
    body += "sys.stderr.write('e' * 10_000_000)\nprint('the end')\n"
    trajectory = await play(cmd=python_command(agent_script(tmp_path, body)))
    recorded = program(trajectory)
    assert trajectory.final_output == "the end"
    assert len(recorded["stdout_tail"]) <= 8192 and len(recorded["stderr_tail"]) <= 8192


async def test_the_memory_limit_is_the_model_s_limit_exceeded(tmp_path: Path) -> None:
    body = "chunks = [bytearray(50 * 2**20) for _ in range(40)]\nprint(len(chunks))\n"
    trajectory = await play(cmd=python_command(agent_script(tmp_path, body)), memory_mb=200)
    error = trajectory.to_dict()["error"]
    assert (error["kind"], error["class"]) == ("limit_exceeded", "model"), error
    assert "200 MB" in error["message"] and "MemoryError" in program(trajectory)["stderr_tail"]


STUBBORN = """
child = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"])
open(sys.argv[1] + ".cwd", "w").write(os.getcwd())
open(sys.argv[1], "w").write(f"{os.getpid()} {child.pid}")
time.sleep(300)
"""
"""A program whose child ignores SIGTERM and sleeps: only SIGKILL to the group ends it."""


def pids(path: Path) -> list[int]:
    return [int(pid) for pid in path.read_text().split()] if path.exists() else []


async def test_the_time_limit_stops_the_whole_group_as_the_model_s_timeout(tmp_path: Path) -> None:
    written = tmp_path / "pids"
    cmd = python_command(agent_script(tmp_path, STUBBORN), str(written))
    trajectory = await play(cmd=cmd, timeout_s=2)
    error = trajectory.to_dict()["error"]
    assert (error["kind"], error["class"]) == ("timeout", "model") and "timeout_s" in error[
        "message"
    ]
    assert program(trajectory)["signal"] in ("SIGTERM", "SIGKILL")
    assert len(pids(written)) == 2
    await eventually(lambda: not any(running(pid) for pid in pids(written)), 10)


async def test_cancelling_an_attempt_leaves_nothing_running(tmp_path: Path) -> None:
    written = tmp_path / "pids"
    cmd = python_command(agent_script(tmp_path, STUBBORN), str(written))
    runner = load_runner("command", cmd=cmd)
    ctx = context()
    attempt = asyncio.create_task(runner.run(SAMPLE, ctx))
    await eventually(lambda: len(pids(written)) == 2, 30)
    attempt.cancel()
    with pytest.raises(asyncio.CancelledError):
        await attempt
    # SIGKILL went to the whole group before the attempt ended; the kernel ends the grandchild
    # when it next runs it, which on a loaded machine is a moment later.
    await eventually(lambda: not any(running(pid) for pid in pids(written)), 5)
    workdir = Path((tmp_path / "pids.cwd").read_text())
    assert not workdir.parent.exists()  # the attempt's folder is gone too


async def test_a_kept_working_directory_is_in_the_run_directory(tmp_path: Path) -> None:
    cmd = python_command(agent_script(tmp_path, "open('out.txt', 'w').write('x')\nprint(1)\n"))
    await play(run_dir=tmp_path / "run", cmd=cmd, keep_workdir=True)
    (kept,) = (tmp_path / "run" / "workdirs").iterdir()
    assert kept.name.startswith("s1-0-")
    assert (kept / "work" / "out.txt").read_text() == "x" and (kept / "sample.json").is_file()


async def test_the_program_s_limit_stays_inside_the_engine_s(tmp_path: Path) -> None:
    script = agent_script(tmp_path, "time.sleep(30)\n")
    runner = load_runner("command", cmd=python_command(script), timeout_s=500)
    ctx = context(time_limit=10.5)  # the program gets 10.5 - 8 s: the runner stops it itself
    trajectory = await asyncio.wait_for(runner.run(SAMPLE, ctx), 10.5)
    assert trajectory.error is not None and trajectory.error.kind == "timeout"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"cmd": "run {questoin}"}, "{questoin}, which is not known; the fields are {question}"),
        ({"cmd": "awk '{print $1}'"}, "which is not known"),
        ({"cmd": "x }"}, "write a literal brace as {{ or }}"),
        ({"cmd": "x", "check": "test {nope}"}, "check="),
        ({"cmd": "x", "answer": "stderr"}, "option answer"),
        ({"cmd": "x", "memory_mb": 1}, "option memory_mb"),
        ({"cmd": ""}, "option cmd"),
        ({"cmd": "x", "timeout": 3}, "did you mean 'timeout_s'"),
    ],
)
def test_mistakes_in_the_options_are_config_errors(options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=None) as raised:
        load_runner("command", **options)
    assert message in str(raised.value)


def test_fields_are_shell_quoted_in_a_command_line() -> None:
    line = render("echo {question}", {"question": "$(rm -rf /); `x` 'y'"})
    assert shlex.split(str(line)) == ["echo", "$(rm -rf /); `x` 'y'"]


async def test_a_command_not_found_says_so(tmp_path: Path) -> None:
    trajectory = await play(cmd=["/nowhere/agent-xyz"])
    assert trajectory.error is not None and "/nowhere/agent-xyz" in trajectory.error.message


HARNESS = """import asyncio, json, sys
from pathlib import Path
from agent_eval.system.programs import Program, run_program
program = Program(json.loads(sys.argv[1]), Path(sys.argv[2]), {"PATH": "/usr/bin:/bin"}, 300)
asyncio.run(run_program(program))
"""
"""A harness that runs one program and is then killed outright."""


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv (util-linux) is absent")
async def test_a_program_dies_with_a_harness_killed_outright(tmp_path: Path) -> None:
    """Only the program itself: its own children are stopped by the harness, as it ends."""
    written = tmp_path / "pid"
    body = "open(sys.argv[1], 'w').write(str(os.getpid()))\ntime.sleep(300)\n"
    argv = [sys.executable, str(agent_script(tmp_path, body)), str(written)]
    harness = await asyncio.create_subprocess_exec(
        sys.executable, "-c", HARNESS, json.dumps(argv), str(tmp_path),
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])},
    )  # fmt: skip
    await eventually(lambda: written.exists() and written.read_text() != "", 30)
    harness.kill()
    await harness.wait()
    await eventually(lambda: not running(int(written.read_text())), 10)


def test_words_naming_files_where_agent_eval_started_are_made_absolute(tmp_path: Path) -> None:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "mine.py").write_text("")
    (tmp_path / "my agent.py").write_text("")
    line = "python agents/mine.py -m x.y --out {workdir}/a.py && cat notes.txt > out.txt ."
    made = anchored(line, tmp_path)
    assert made == line.replace("agents/mine.py", shlex.quote(str(tmp_path / "agents/mine.py")))
    argv = anchored(["python", "my agent.py", "missing.py", "-v"], tmp_path)
    assert argv == ["python", str(tmp_path / "my agent.py"), "missing.py", "-v"]
