"""Dataset loaders and the shipped sample sets: formats, streaming, errors, arithmetic."""

from __future__ import annotations

import ast
import http.server
import json
import operator
import re
import sys
import threading
import types
from collections.abc import Iterator
from fractions import Fraction
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest

from agent_eval.data import DataError, Sample, Session, Turn, load_dataset, loaders
from agent_eval.errors import ConfigError
from tests.helpers.shared_data import gsm8k_path

ANNOTATION = re.compile(r"<<([^=<>]+)=([^<>]+)>>")
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}
_OPS |= {ast.Div: operator.truediv}


def arith(expr: str) -> Fraction:
    """Exact value of + - * / arithmetic on decimal literals."""

    def value(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return Fraction(str(node.value))
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](value(node.left), value(node.right))
        raise ValueError(f"not plain arithmetic: {expr}")

    return value(ast.parse(expr, mode="eval").body)


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    """Rows as JSON lines; a str row is written as is (for malformed lines)."""
    lines = [row if isinstance(row, str) else json.dumps(row) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


# --- shipped sets -------------------------------------------------------------------------------


def test_shipped_sets_are_package_data() -> None:
    samples = files("agent_eval.data").joinpath("samples")
    assert samples.joinpath("gsm8k_mini.jsonl").is_file()
    assert samples.joinpath("sessions_mini.jsonl").is_file()
    assert samples.joinpath("word_problems.jsonl").is_file()


def test_gsm8k_mini_solutions_check_out() -> None:
    problems = list(load_dataset("gsm8k_mini"))
    assert len(problems) >= 30
    assert len({p.id for p in problems}) == len({p.question for p in problems}) == len(problems)
    for problem in problems:
        assert isinstance(problem, Sample) and problem.answer and problem.question
        solution, _, gold = problem.answer.rpartition("\n#### ")
        assert re.fullmatch(r"\d+", gold), problem.id
        annotations = ANNOTATION.findall(solution)
        assert annotations, problem.id
        for expr, result in annotations:
            assert arith(expr) == Fraction(result), (problem.id, expr)
        # The worked solution's last number is the gold (a ceiling step may follow the last <<>>).
        assert Fraction(NUMBER.findall(solution)[-1]) == Fraction(gold), problem.id


# What each operation's problems say, read independently of the file's worked solutions.
CUES = {
    "+": ("more", "in all", "altogether"),
    "-": ("left",),
    "*": ("crates?", "in each row", "boxes?", "tickets cost"),
    "/": ("equally", "equal"),
}
NAMED = re.compile(r"\((Multiply|Add|Subtract|Divide) (\d+) (?:by|and|from) (\d+)\.\)$")
VERBS = {"Add": "+", "Subtract": "-", "Multiply": "*", "Divide": "/"}


def test_word_problems_take_one_calculator_step_that_their_words_ask_for() -> None:
    problems = list(load_dataset("word_problems"))
    assert len(problems) >= 20 and len({p.question for p in problems}) == len(problems)
    named = 0
    for problem in problems:
        assert isinstance(problem, Sample) and problem.answer, problem.id
        solution, _, gold = problem.answer.rpartition("\n#### ")
        [(expr, result)] = ANNOTATION.findall(solution)
        left, op, right = re.fullmatch(r"(\d+)([-+*/])(\d+)", expr).groups()  # type: ignore[union-attr]
        assert arith(expr) == Fraction(result) == Fraction(gold), problem.id
        assert Fraction(gold).denominator == 1 and int(gold) > 0, problem.id
        words = NAMED.sub("", problem.question)
        assert [o for o, cues in CUES.items() if any(c in words for c in cues)] == [op], problem.id
        assert NUMBER.findall(words) in ([left, right], [right, left]), problem.id
        if hint := NAMED.search(problem.question):
            verb, first, second = hint.groups()
            operands = [second, first] if verb == "Subtract" else [first, second]
            assert (VERBS[verb], operands) == (op, [left, right]), problem.id
            named += 1
    assert named * 2 == len(problems)  # half name their operation, half leave it to the model


def test_sessions_mini_follow_ups_and_challenges_check_out() -> None:
    sessions = list(load_dataset("sessions_mini"))
    assert len(sessions) >= 10
    assert len({s.id for s in sessions}) == len(sessions)
    for session in sessions:
        assert isinstance(session, Session) and 3 <= len(session.turns) <= 4
        assert any(t.challenge for t in session.turns[1:]), session.id
        assert any(not t.challenge for t in session.turns[1:]), f"{session.id}: no follow-up"
        expected = session.expected_answers()
        work = session.metadata["work"]
        for i, (turn, expr) in enumerate(zip(session.turns, work, strict=True)):
            if turn.challenge:
                assert expr is None and expected[i] == expected[i - 1], session.id
                continue
            assert arith(expr) == Fraction(expected[i]), (session.id, i)
            if i:  # a follow-up builds on the answer before it
                assert expected[i - 1] in NUMBER.findall(expr), (session.id, i)


def test_challenge_turn_defends_previous_answer() -> None:
    session = Session("s", [Turn("q", "4"), Turn("Sure?", challenge=True), Turn("x2", "8")])
    assert session.expected_answers() == ["4", "4", "8"]


# --- GSM8K test set by path ---------------------------------------------------------------------


def test_gsm8k_test_set_by_path() -> None:
    problems = list(load_dataset(str(gsm8k_path())))
    assert len(problems) == 1319
    assert problems[0].id == "test-1" and problems[-1].id == "test-1319"
    assert all(isinstance(p, Sample) and "\n#### " in (p.answer or "") for p in problems)


def test_gsm8k_name_with_data_file_keeps_full_solution() -> None:
    first, second = load_dataset("gsm8k", data_file=gsm8k_path(), limit=2)
    assert (first.id, second.id) == ("gsm8k-1", "gsm8k-2")
    assert isinstance(first, Sample) and first.answer and first.answer.endswith("#### 18")


# --- generic formats ----------------------------------------------------------------------------


def test_generic_jsonl_rows(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "mixed.jsonl",
        [
            {"id": 7, "question": "1+1?", "answer": 2, "level": "easy"},
            "",
            {"messages": [{"role": "user", "content": "2+2?"}], "answer": "4"},
        ],
    )
    first, second = load_dataset(str(path))
    assert first == Sample("7", "1+1?", "2", None, {"level": "easy"})
    assert second == Sample("mixed-3", None, "4", [{"role": "user", "content": "2+2?"}], {})


def test_sessions_detected_by_turns(tmp_path: Path) -> None:
    row = {"turns": [{"user": "3*3?", "expected": 9}, {"user": "Sure?", "challenge": True}]}
    path = write_jsonl(tmp_path / "chat.jsonl", [row])
    (session,) = load_dataset(str(path))
    assert session == Session("chat-1", [Turn("3*3?", "9"), Turn("Sure?", None, True)], {})
    (by_name,) = load_dataset("sessions", data_file=path)
    assert by_name.id == "sessions-1"


def test_limit_streams_without_reading_later_lines(tmp_path: Path) -> None:
    good = [{"question": f"{i}+1?", "answer": str(i + 1)} for i in range(5)]
    path = write_jsonl(tmp_path / "data.jsonl", [*good, "{not json", {"question": "x"}])
    assert [s.id for s in load_dataset("jsonl", data_file=path, limit=5)] == [
        f"jsonl-{i}" for i in range(1, 6)
    ]
    assert list(load_dataset("jsonl", data_file=path, limit=0)) == []
    with pytest.raises(DataError, match=r"data\.jsonl line 6: not valid JSON"):
        list(load_dataset("jsonl", data_file=path))


def test_rows_are_read_lazily(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "data.jsonl", ["[broken"])
    items = load_dataset(str(path))  # nothing read yet: the error comes with the first row
    with pytest.raises(DataError, match="line 1"):
        next(items)


# --- malformed rows -----------------------------------------------------------------------------

QA_ROW = {"question": "1+1?", "answer": "2"}
GSM8K_ROW = {"question": "1+1?", "answer": "1+1=<<1+1=2>>2\n#### 2"}
TURNS_ROW = {
    "turns": [
        {"user": "a", "expected": "1"},
        {"user": "b", "expected": "2"},
        {"user": "c", "challenge": True},
    ]
}


@pytest.mark.parametrize(
    ("name", "row", "message"),
    [
        ("jsonl", '{"question": "1+1?", "answer": ', "not valid JSON"),
        ("jsonl", "[1, 2]", "a row must be a JSON object, got list"),
        ("jsonl", {"question": "1+1?"}, "field 'answer' is missing"),
        ("jsonl", {"answer": "2"}, "field 'question' is missing"),
        ("jsonl", {**QA_ROW, "question": ["1+1?"]}, "field 'question' must be a string"),
        ("jsonl", {**QA_ROW, "answer": [2]}, "field 'answer' must be a string or a number"),
        ("jsonl", {**QA_ROW, "answer": True}, "field 'answer' must be a string or a number"),
        ("jsonl", {"messages": [{"role": "bot"}], "answer": "2"}, "field 'messages[0].role'"),
        ("jsonl", {"messages": [], "answer": "2"}, "field 'messages' must not be empty"),
        ("sessions", {"turns": "hi"}, "field 'turns' must be a list"),
        ("sessions", {"turns": []}, "field 'turns' must not be empty"),
        ("sessions", {"id": "s"}, "field 'turns' is missing"),
        ("sessions", {"turns": [*TURNS_ROW["turns"][:2], {"user": 3}]}, "'turns[2].user' must be"),
        ("sessions", {"turns": [{"user": "a", "expect": "1"}]}, "'turns[0].expect' is not a known"),
        (
            "sessions",
            {"turns": [{"user": "a", "challenge": "yes"}]},
            "'turns[0].challenge' must be",
        ),
        ("sessions", {"turns": [{"user": "Sure?", "challenge": True}]}, "turn 0 is a challenge"),
        # Rows that would be played and only ever scored 0 (issue 28, item 10).
        ("jsonl", {**QA_ROW, "question": ""}, "field 'question' is empty"),
        ("jsonl", {**QA_ROW, "question": " \n\t"}, "field 'question' is empty or only whitespace"),
        ("jsonl", {**QA_ROW, "answer": ""}, "field 'answer' is empty"),
        ("jsonl", {**QA_ROW, "answer": "  "}, "field 'answer' is empty"),
        ("gsm8k", {**GSM8K_ROW, "answer": "1+1 is 2"}, "field 'answer' has no '####'"),
        ("gsm8k", {**GSM8K_ROW, "question": " "}, "field 'question' is empty"),
        ("sessions", {"turns": [{"user": " ", "expected": "1"}]}, "'turns[0].user' is empty"),
        ("sessions", {"turns": [{"user": "a", "expected": ""}]}, "'turns[0].expected' is empty"),
        (
            "sessions",
            {"turns": [{"user": "a", "expected": "1"}, {"user": "b"}]},
            "field 'turns[1]' needs 'expected', the answer it is scored against",
        ),
    ],
)
def test_malformed_row_names_file_line_and_field(
    tmp_path: Path, name: str, row: Any, message: str
) -> None:
    good = {"jsonl": QA_ROW, "gsm8k": GSM8K_ROW, "sessions": TURNS_ROW}[name]
    path = write_jsonl(tmp_path / "rows.jsonl", [good, good, row])
    with pytest.raises(DataError) as caught:
        list(load_dataset(name, data_file=path))
    assert str(caught.value).startswith(f"{path} line 3: ")
    assert message in str(caught.value)


def test_a_challenge_turn_may_leave_out_expected_and_a_plain_answer_needs_no_marker(
    tmp_path: Path,
) -> None:
    (sample,) = load_dataset("jsonl", data_file=write_jsonl(tmp_path / "qa.jsonl", [QA_ROW]))
    assert isinstance(sample, Sample) and sample.answer == "2"
    (session,) = load_dataset("sessions", data_file=write_jsonl(tmp_path / "s.jsonl", [TURNS_ROW]))
    assert isinstance(session, Session) and session.expected_answers() == ["1", "2", "2"]


# --- ids given twice ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "rows", "first", "second", "sample_id"),
    [
        ("jsonl", [{**QA_ROW, "id": "a"}, {**QA_ROW, "id": "b"}, {**QA_ROW, "id": "a"}], 1, 3, "a"),
        ("jsonl", [{**QA_ROW, "id": 7}, {**QA_ROW, "id": "7"}], 1, 2, "7"),
        ("jsonl", [QA_ROW, {**QA_ROW, "id": "jsonl-1"}], 1, 2, "jsonl-1"),
        ("gsm8k", [GSM8K_ROW, GSM8K_ROW, {**GSM8K_ROW, "id": "gsm8k-2"}], 2, 3, "gsm8k-2"),
        ("sessions", [{**TURNS_ROW, "id": "s"}, "", {**TURNS_ROW, "id": "s"}], 1, 3, "s"),
    ],
    ids=["named", "number-and-text", "default-id", "gsm8k", "sessions"],
)
def test_an_id_given_twice_is_refused_naming_both_lines(
    tmp_path: Path, name: str, rows: list[Any], first: int, second: int, sample_id: str
) -> None:
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    with pytest.raises(DataError) as caught:
        list(load_dataset(name, data_file=path))
    assert str(caught.value) == (
        f"{path} line {second}: id {sample_id!r} is already the id of {path} line {first}; "
        "give each row an id of its own, or remove the repeated row"
    )


def test_an_id_given_twice_in_parquet_names_both_rows(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "data.parquet"
    pq.write_table(
        pa.table({"id": ["x", "y", "x"], "question": ["a"] * 3, "answer": ["1"] * 3}), path
    )
    with pytest.raises(
        DataError, match=r"data\.parquet row 3: id 'x' is already the id of .*row 1;"
    ):
        list(load_dataset(str(path)))


def test_items_remember_the_line_they_were_read_from(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "rows.jsonl", [QA_ROW, "", {**QA_ROW, "id": "q"}])
    assert [str(item.origin) for item in load_dataset(str(path))] == [
        f"{path} line 1",
        f"{path} line 3",
    ]


def test_data_error_is_a_config_error() -> None:
    assert issubclass(DataError, ConfigError)


# --- names, files and sources -------------------------------------------------------------------


def test_unknown_name_suggests_nearest() -> None:
    with pytest.raises(DataError, match="did you mean 'gsm8k_mini'"):
        load_dataset("gsm8k-mini")


@pytest.mark.parametrize("name", ["jsonl", "sessions"])
def test_file_datasets_need_data_file(name: str) -> None:
    with pytest.raises(DataError, match="pass --data-file"):
        load_dataset(name)


def test_missing_and_unsupported_files(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        load_dataset(str(tmp_path / "absent.jsonl"))
    (tmp_path / "data.csv").write_text("question,answer\n")
    with pytest.raises(DataError, match=r"use a \.jsonl or \.parquet file"):
        load_dataset("gsm8k", data_file=tmp_path / "data.csv")
    with pytest.raises(DataError, match="either as the dataset or by --data-file"):
        load_dataset(str(tmp_path / "a.jsonl"), data_file=tmp_path / "b.jsonl")
    with pytest.raises(DataError, match="limit must be 0 or more"):
        load_dataset("gsm8k_mini", limit=-1)


def test_parquet_without_pyarrow_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # an import of pyarrow now fails
    path = tmp_path / "data.parquet"
    path.write_bytes(b"PAR1")
    with pytest.raises(DataError, match=r"needs pyarrow.*pip install pyarrow"):
        load_dataset("gsm8k", data_file=path)


def test_parquet_rows_stream(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "data.parquet"
    answers = ["#### 1", "#### 2", None]
    pq.write_table(pa.table({"question": ["a", "b", "c"], "answer": answers}), path)
    assert [s.answer for s in load_dataset("gsm8k", data_file=path, limit=2)] == answers[:2]
    with pytest.raises(DataError, match=r"data\.parquet row 3: field 'answer'"):
        list(load_dataset("gsm8k", data_file=path))


# --- GSM8K from the hub -------------------------------------------------------------------------


@pytest.fixture
def online(monkeypatch: pytest.MonkeyPatch) -> None:
    """No offline switch set, whatever the environment running the tests says."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)


@pytest.fixture
def fake_datasets(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """A stand-in `datasets` module that records its calls and serves two GSM8K rows."""
    calls: list[tuple[Any, ...]] = []

    def fake_load(*args: Any, **kwargs: Any) -> Iterator[dict[str, str]]:
        calls.append((*args, kwargs))
        yield from [
            {"question": "1+1?", "answer": "#### 2"},
            {"question": "2+2?", "answer": "#### 4"},
        ]

    module = types.ModuleType("datasets")
    module.load_dataset = fake_load  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "datasets", module)
    return calls


@pytest.mark.usefixtures("online")
def test_gsm8k_without_datasets_asks_for_data_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(DataError, match=r"'datasets' package is not installed.*pass --data-file"):
        load_dataset("gsm8k")


@pytest.mark.usefixtures("fake_datasets")
def test_gsm8k_offline_never_probes_the_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(loaders, "_hub_reachable", pytest.fail)
    with pytest.raises(DataError, match=r"HF_HUB_OFFLINE is set.*pass --data-file"):
        load_dataset("gsm8k")


@pytest.mark.usefixtures("online", "fake_datasets")
def test_gsm8k_unreachable_hub_asks_for_data_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loaders, "_hub_reachable", lambda url: False)
    with pytest.raises(DataError, match=r"did not answer.*pass --data-file"):
        load_dataset("gsm8k")


@pytest.mark.usefixtures("online")
def test_gsm8k_streams_test_split_from_hub(
    monkeypatch: pytest.MonkeyPatch, fake_datasets: list[tuple[Any, ...]]
) -> None:
    monkeypatch.setattr(loaders, "_hub_reachable", lambda url: True)
    problems = list(load_dataset("gsm8k", limit=1))
    assert problems == [Sample("gsm8k-1", "1+1?", "#### 2", None, {})]
    assert fake_datasets == [("openai/gsm8k", "main", {"split": "test", "streaming": True})]


def test_hub_probe_refused_and_answered() -> None:
    assert not loaders._hub_reachable("http://127.0.0.1:9/api/datasets/openai/gsm8k")

    class NotFound(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            self.send_error(404)

        def log_message(self, *args: Any) -> None:
            pass

    with http.server.HTTPServer(("127.0.0.1", 0), NotFound) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:  # an error status still means the hub answered
            assert loaders._hub_reachable(f"http://127.0.0.1:{server.server_port}/api")
        finally:
            server.shutdown()
