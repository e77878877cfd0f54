"""On-disk row formats, validated at the edge and turned into samples and sessions.

A row that does not fit fails with a message naming the file, the line and the field. A row
that would be played but never scored right (a blank question, a turn with no answer to expect,
a GSM8K answer without its `####` final answer) does not fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from agent_eval.data.errors import DataError
from agent_eval.data.records import Item, Origin, Sample, Session, Turn

Kind = Literal["qa", "gsm8k", "sessions"]
"""Row formats: a question and its answer (for gsm8k, a worked solution), or a session."""

# Pydantic's wording for common error types, rephrased as "field 'x' ...".
_PHRASES = {
    "missing": "is missing",
    "string_type": "must be a string",
    "bool_type": "must be true or false",
    "list_type": "must be a list",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "too_short": "must not be empty",
    "extra_forbidden": "is not a known field",
}


@dataclass(frozen=True)
class RawRow:
    """One decoded row and where it came from, for ids and error messages."""

    origin: Origin
    data: object


def _scalar_text(value: object) -> object:
    """Numbers become text (answers and ids are compared as text); other types fail."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise PydanticCustomError("scalar_type", "must be a string or a number")
    return str(value)


def _not_blank(text: str) -> str:
    """Refuse text that is empty or only whitespace: a blank prompt or gold is a broken row."""
    if not text.strip():
        raise PydanticCustomError("blank", "is empty or only whitespace")
    return text


def _inside(path: str) -> str:
    """Refuse a file name that could leave the working directory it is written into."""
    parts = PurePosixPath(path).parts
    if not parts or path.startswith("/") or "\\" in path or "\0" in path or ".." in parts:
        raise PydanticCustomError(
            "unsafe_path",
            "is not a relative path inside the working directory (no leading '/', no '..', "
            "no backslash)",
        )
    return path


Text = Annotated[str, BeforeValidator(_scalar_text)]
RelativePath = Annotated[str, AfterValidator(_inside)]
Filled = Annotated[str, AfterValidator(_not_blank)]
FilledText = Annotated[Text, AfterValidator(_not_blank)]


class MessageRow(BaseModel):
    """A chat message; content is left to the OpenAI client to judge."""

    model_config = ConfigDict(extra="allow", strict=True)

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: Any = None


class QARow(BaseModel):
    """A single-turn row: `question` or `messages`, and `answer` (or its own `check` command);
    `files` to copy into an agent program's working directory; other fields go to metadata."""

    model_config = ConfigDict(extra="allow", strict=True)

    id: Text | None = None
    question: Filled | None = None
    messages: list[MessageRow] | None = Field(default=None, min_length=1)
    answer: FilledText | None = None
    files: dict[RelativePath, str] | None = None
    check: Filled | None = None
    metadata: dict[str, Any] = {}

    @model_validator(mode="after")
    def _has_prompt(self) -> QARow:
        if self.question is None and self.messages is None:
            raise PydanticCustomError(
                "prompt_missing",
                "field 'question' is missing (a row needs 'question' or 'messages')",
            )
        if self.answer is None and self.check is None:
            raise PydanticCustomError(
                "answer_missing",
                "field 'answer' is missing (a row needs it unless it carries its own 'check')",
            )
        return self


class GSM8KRow(QARow):
    """A GSM8K row: its answer is a worked solution whose final answer follows `####`."""

    @field_validator("answer")
    @classmethod
    def _has_final_answer(cls, answer: str | None) -> str | None:
        if answer is not None and "####" not in answer:
            raise PydanticCustomError(
                "no_final_answer",
                "has no '####': a GSM8K answer ends with '#### <final answer>', which is the "
                "gold the reward reads",
            )
        return answer


class TurnRow(BaseModel):
    """One turn of a session; unknown keys are typos, so they fail."""

    model_config = ConfigDict(extra="forbid", strict=True)

    user: Filled
    expected: FilledText | None = None
    challenge: bool = False

    @model_validator(mode="after")
    def _has_gold(self) -> TurnRow:
        # Every turn is scored: one with nothing to expect could only ever score 0.
        if self.expected is None and not self.challenge:
            raise PydanticCustomError(
                "expected_missing",
                "needs 'expected', the answer it is scored against (only a challenge turn "
                "may leave it out: it expects the answer before it to stand)",
            )
        return self


class SessionRow(BaseModel):
    """A multi-turn row: `turns`, each with `user`, and `expected` unless it is a `challenge`."""

    model_config = ConfigDict(extra="allow", strict=True)

    id: Text | None = None
    turns: list[TurnRow] = Field(min_length=1)
    metadata: dict[str, Any] = {}

    @field_validator("turns")
    @classmethod
    def _challenge_follows_answer(cls, turns: list[TurnRow]) -> list[TurnRow]:
        if turns[0].challenge:
            raise PydanticCustomError(
                "challenge_first", "turn 0 is a challenge but there is no earlier answer to check"
            )
        return turns


def parse_row(row: RawRow, kind: Kind, dataset: str) -> Item:
    """The sample or session in `row`; ids default to `<dataset>-<number>`."""
    if not isinstance(row.data, dict):
        raise DataError(f"{row.origin}: a row must be a JSON object, got {type(row.data).__name__}")
    try:
        if kind == "sessions":
            return _to_session(row, dataset)
        return _to_sample(row, GSM8KRow if kind == "gsm8k" else QARow, dataset)
    except ValidationError as exc:
        problems = "; ".join(_describe(error) for error in exc.errors())
        raise DataError(f"{row.origin}: {problems}") from None


def _to_sample(row: RawRow, model: type[QARow], dataset: str) -> Sample:
    parsed = model.model_validate(row.data)
    return Sample(
        id=parsed.id or f"{dataset}-{row.origin.number}",
        question=parsed.question,
        answer=parsed.answer,
        messages=[m.model_dump(exclude_unset=True) for m in parsed.messages or []] or None,
        metadata={**(parsed.model_extra or {}), **parsed.metadata},
        origin=row.origin,
        files=parsed.files,
        check=parsed.check,
    )


def _to_session(row: RawRow, dataset: str) -> Session:
    parsed = SessionRow.model_validate(row.data)
    return Session(
        id=parsed.id or f"{dataset}-{row.origin.number}",
        turns=[Turn(t.user, t.expected, t.challenge) for t in parsed.turns],
        metadata={**(parsed.model_extra or {}), **parsed.metadata},
        origin=row.origin,
    )


def _describe(error: ErrorDetails) -> str:
    """One pydantic error as "field 'turns[2].user' must be a string"."""
    message = _PHRASES.get(error["type"], error["msg"].replace("Input should be", "must be"))
    if not error["loc"]:
        return message
    return f"field '{_field_path(error['loc'])}' {message}"


def _field_path(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}" if path else str(part)
    return path
