"""An index of one run's samples.jsonl: compact columns per attempt, transcripts left on disk."""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import orjson

from agent_eval.agents.trajectory import question
from agent_eval.errors import ConfigError
from agent_eval.metrics import AttemptScore
from agent_eval.metrics.attempt import SCORE_FIELDS
from agent_eval.results.record import AttemptRecord

CHUNK = 8 << 20
"""Bytes read at a time: bounds the memory of indexing a large file."""

# Column name -> dtype of the numeric columns kept per attempt.
NUMERIC: dict[str, Any] = {
    "offset": np.int64,
    "length": np.int64,
    "sample": np.int32,
    "attempt": np.int32,
    "correct": np.bool_,
    "unscored": np.bool_,
    "reward": np.float64,
    "error": np.int32,
    "model_calls": np.int32,
    "tool_calls": np.int32,
    "tokens": np.int64,
    "latency_s": np.float64,
}
RANGED = ("model_calls", "tool_calls", "tokens", "latency_s")
"""The columns a filter can bound by a minimum and a maximum."""
ORIGINAL = "original"
"""The perturbation filter's name for samples that perturb none."""
SORTABLE = ("row", "sample_id", "attempt", "reward", "correct", "error_kind", "workers", *RANGED)


@dataclass(frozen=True)
class Filter:
    """Which attempts to show; every field left at its default lets all attempts through."""

    outcome: str | None = None
    """'correct', 'wrong' (scored, not correct), 'unscored' (an infrastructure error), or a kind."""
    worker: str | None = None
    ranges: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    """Column of RANGED -> (minimum, maximum), both inclusive, None for no bound."""
    text: str | None = None
    """Case-insensitive substring of the sample's question or the attempt's answer."""
    perturbation: str | None = None
    """ORIGINAL (attempts at the originals) or a perturbation kind (attempts at its variants)."""


SHOWN_CHARS = 200
"""A row's question and final output are cut to this many characters: a list shows them, a
sample's page shows them whole."""


@dataclass(frozen=True)
class Row:
    """One attempt on a page: its place in the index and the workers it called (what the index
    adds), the attempt as its line holds it, the trajectory's model calls counted, and the
    question and final output, shortened."""

    index: int
    workers: tuple[str, ...]
    attempt: AttemptScore
    question: str
    final_output: str

    @classmethod
    def of(cls, index: int, workers: tuple[str, ...], record: AttemptRecord) -> Row:
        """The row of one attempt's record."""
        output = str(record.trajectory.get("final_output") or "")
        asked = question(record.trajectory)
        return cls(index, workers, record.score(), _shortened(asked), _shortened(output))

    def to_dict(self) -> dict[str, Any]:
        """The row as the view's page reads it: the attempt's fields and the columns it shows."""
        attempt = self.attempt
        return {
            **dataclasses.asdict(attempt),
            "index": self.index,
            "workers": self.workers,
            "error_kind": attempt.error_kind,
            "unscored": not attempt.scored,
            "tokens": attempt.prompt_tokens + attempt.completion_tokens,
            "question": self.question,
            "final_output": self.final_output,
        }


def _shortened(text: str) -> str:
    """The text on one line, cut to SHOWN_CHARS characters with an ellipsis when longer."""
    flat = " ".join(text.split())
    return flat if len(flat) <= SHOWN_CHARS else flat[: SHOWN_CHARS - 1] + "…"


@dataclass(frozen=True)
class Page:
    """The rows of one page and how many attempts match the filter in all."""

    total: int
    rows: list[Row]


@dataclass(frozen=True)
class Outcomes:
    """Each attempt's sample (by code), attempt index and outcome; what each sample perturbs."""

    sample: np.ndarray
    attempt: np.ndarray
    correct: np.ndarray
    scored: np.ndarray
    samples: list[str]
    """Sample id by code."""
    origins: list[str | None]
    """By sample code: the original's id for a variant, None for an original."""
    kinds: list[str | None]
    """By sample code: the variant's perturbation, None for an original."""


@dataclass
class _Batch:
    """Newly read attempts, a tuple of NUMERIC's values each, until they join the arrays."""

    rows: list[tuple[Any, ...]] = field(default_factory=list)
    worker_rows: list[int] = field(default_factory=list)
    worker_codes: list[int] = field(default_factory=list)


class _Codes:
    """Interns strings as small integers, in order of first appearance."""

    def __init__(self, first: list[str] | None = None) -> None:
        self.names: list[str] = list(first or [])
        self.code = {name: i for i, name in enumerate(self.names)}

    def __call__(self, name: str) -> int:
        found = self.code.get(name)
        if found is None:
            found = self.code[name] = len(self.names)
            self.names.append(name)
        return found


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while indexing; on again after, if it was on."""
    # Every parsed line allocates dicts that die at once: collections over them found no
    # cycles and took a tenth of a 100,000-line index (bench/view.py).
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def workers_of(trajectory: dict[str, Any]) -> list[str]:
    """The workers the attempt's model calls went to, each once, in order of first call."""
    calls = trajectory.get("model_calls")
    if not calls:
        return []
    # A call whose answer named no worker (null) went to none the page can name.
    workers = [worker for call in calls if (worker := call.get("worker")) is not None]
    # Most attempts make one call: no dict for them (about 5% of indexing 100,000 lines).
    return workers if len(workers) == 1 else list(dict.fromkeys(workers))


class RunIndex:
    """The attempts of one run directory's samples.jsonl, refreshed as the run appends to it."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / "samples.jsonl"
        self._reset()
        self.refresh()

    def _reset(self) -> None:
        self._end = 0
        self._inode = -1
        self._ends: tuple[bytes, bytes] | None = None
        """Digests of the first and last indexed lines: a file rewritten in place changes them."""
        self._columns = {name: np.zeros(0, dtype) for name, dtype in NUMERIC.items()}
        self._worker_rows = np.zeros(0, np.int32)
        self._worker_codes = np.zeros(0, np.int32)
        self._samples = _Codes()
        self._kinds = _Codes([""])  # code 0: no error
        self._worker_names = _Codes()
        self._perturbations = _Codes([""])  # code 0: an original
        self._origins: list[str | None] = []
        """The original's id per sample code; None for an original."""
        self._sample_kinds: list[int] = []
        """The perturbation's code per sample code."""
        self._questions: list[str] = []
        """Lowercase question per sample code: attempts of a sample share it."""
        self._answers: list[str] = []
        """Lowercase answer and final output per attempt."""

    def __len__(self) -> int:
        return len(self._columns["offset"])

    @property
    def kinds(self) -> list[str]:
        """The error kinds seen so far."""
        return self._kinds.names[1:]

    @property
    def workers(self) -> list[str]:
        """The workers seen so far."""
        return list(self._worker_names.names)

    @property
    def perturbations(self) -> list[str]:
        """The perturbation kinds of the variants seen so far."""
        return self._perturbations.names[1:]

    def refresh(self) -> int:
        """Index the complete lines appended since the last read; returns how many were added."""
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            stat = None
        # A replaced, shortened or rewritten file (a resume that set records aside) is a new file.
        if (
            stat is None
            or stat.st_ino != self._inode
            or stat.st_size < self._end
            or self._rewritten()
        ):
            self._reset()
        if stat is None:
            return 0
        self._inode = stat.st_ino
        before = len(self)
        batch = _Batch()
        try:
            with _collector_paused():
                for offset, line in self._lines():
                    self._add(batch, offset, line)
        except ConfigError:
            # The per-sample and per-attempt lists took part of the batch: start over next time.
            self._reset()
            raise
        self._append(batch)
        self._ends = self._read_ends() if len(self) else None
        return len(self) - before

    def _rewritten(self) -> bool:
        """Whether the first or last indexed line reads otherwise now: written again in place."""
        return self._ends is not None and self._ends != self._read_ends()

    def _read_ends(self) -> tuple[bytes, bytes]:
        """Digests of the bytes where the first and last indexed lines were read."""
        with open(self.path, "rb") as file:  # once per request: one open for both lines
            first, last = (self._read_at(file, i) for i in (0, len(self) - 1))
        return hashlib.blake2b(first).digest(), hashlib.blake2b(last).digest()

    def _lines(self) -> Iterator[tuple[int, bytes]]:
        """Complete lines (newline cut) from the last read on, with offsets; a partial one waits."""
        with open(self.path, "rb") as file:
            file.seek(self._end)
            pending = b""
            while chunk := file.read(CHUNK):
                data = pending + chunk
                cut = data.rfind(b"\n") + 1
                start = self._end
                # Only b"\n" ends a record; splitlines() would also split at a bare b"\r".
                for line in data[:cut].split(b"\n")[:-1]:
                    yield start, line
                    start += len(line) + 1
                self._end = start
                pending = data[cut:]

    def _add(self, batch: _Batch, offset: int, line: bytes) -> None:
        """Take one line's columns into the batch; a line that is no record is a ConfigError."""
        if not line or line.isspace():
            return
        record = AttemptRecord.from_line(line, f"{self.path} at byte {offset}")
        trajectory = record.trajectory
        sample = self._samples(record.sample_id)
        if sample == len(self._questions):
            self._questions.append("")
            origin = record.variant_of
            self._origins.append(origin)
            self._sample_kinds.append(
                self._perturbations(record.perturbation or "") if origin else 0
            )
        if not self._questions[sample]:
            # An attempt stopped before its first message leaves the question to a later one.
            self._questions[sample] = question(trajectory).lower()
        row = len(self._answers)
        for worker in workers_of(trajectory):
            batch.worker_rows.append(row)
            batch.worker_codes.append(self._worker_names(worker))
        answer = f"{record.answer or ''}\n{trajectory.get('final_output') or ''}"
        self._answers.append(answer.lower())
        # In NUMERIC's order; one tuple per line is several times faster than a list per column.
        # The record nulls an unscored attempt's score, whatever its line's version.
        batch.rows.append(
            (
                offset,
                len(line),
                sample,
                record.attempt,
                record.correct is True,
                not record.scored,
                math.nan if record.reward is None else record.reward,
                self._kinds(record.error_kind) if record.error_kind else 0,
                record.model_calls,
                record.tool_calls,
                record.prompt_tokens + record.completion_tokens,
                record.latency_s,
            )
        )

    def _append(self, batch: _Batch) -> None:
        """Join a batch's lists to the column arrays."""
        if not batch.rows:
            return
        columns = zip(*batch.rows, strict=True)
        for (name, dtype), values in zip(NUMERIC.items(), columns, strict=True):
            added = np.array(values, dtype)
            self._columns[name] = np.concatenate([self._columns[name], added])
        rows = np.array(batch.worker_rows, np.int32)
        codes = np.array(batch.worker_codes, np.int32)
        self._worker_rows = np.concatenate([self._worker_rows, rows])
        self._worker_codes = np.concatenate([self._worker_codes, codes])

    def record(self, index: int) -> dict[str, Any]:
        """One attempt's line, read from its place in the file through the record's schema check,
        with the record's score: an unscored one's null, whichever version wrote it."""
        line = self._line(index)
        where = f"{self.path} at byte {int(self._columns['offset'][index])}"
        record = AttemptRecord.from_line(line, where)
        data: dict[str, Any] = orjson.loads(line)
        return {**data, **{name: getattr(record, name) for name in SCORE_FIELDS}}

    def _line(self, index: int) -> bytes:
        """The bytes at one attempt's place in the file."""
        with open(self.path, "rb") as file:
            return self._read_at(file, index)

    def _read_at(self, file: BinaryIO, index: int) -> bytes:
        file.seek(int(self._columns["offset"][index]))
        return file.read(int(self._columns["length"][index]))

    def attempts_of(self, sample_id: str) -> list[int]:
        """The indexes of one sample's attempts, in attempt order; none for an unknown sample."""
        code = self._samples.code.get(sample_id)
        if code is None:
            return []
        found = np.flatnonzero(self._columns["sample"] == code)
        order = np.argsort(self._columns["attempt"][found], kind="stable")
        return [int(i) for i in found[order]]

    def rows(
        self,
        where: Filter | None = None,
        sort: str = "row",
        descending: bool = False,
        offset: int = 0,
        limit: int = 50,
    ) -> Page:
        """One page of the attempts that match `where`, in `sort` order, and their total count."""
        if sort not in SORTABLE:
            raise ValueError(f"cannot sort by {sort!r}; sort by one of {', '.join(SORTABLE)}")
        matched = np.flatnonzero(self._mask(where or Filter()))
        key = self._sort_key(sort)[matched].astype(np.float64)
        order = np.argsort(-key if descending else key, kind="stable")
        page = matched[order[offset : offset + limit]]
        return Page(total=len(matched), rows=self._rows_at(page))

    def count(self, where: Filter) -> int:
        """How many attempts match `where`: a page's total, without sorting them."""
        return int(self._mask(where).sum())

    def _mask(self, where: Filter) -> np.ndarray:
        """Which attempts pass every condition of the filter."""
        mask = np.ones(len(self), np.bool_)
        if where.outcome is not None:
            mask &= self._outcome(where.outcome)
        if where.worker is not None:
            mask &= self._on_worker(where.worker)
        for name, (low, high) in where.ranges.items():
            if name not in RANGED:
                raise ValueError(f"cannot filter by {name!r}; bound one of {', '.join(RANGED)}")
            column = self._columns[name]
            if low is not None:
                mask &= column >= low
            if high is not None:
                mask &= column <= high
        if where.text:
            mask &= self._matches(where.text.lower())
        if where.perturbation is not None:
            mask &= self._perturbed(where.perturbation)
        return mask

    def _outcome(self, outcome: str) -> np.ndarray:
        """The attempts with this outcome, or stopped by this error kind."""
        correct, unscored = self._columns["correct"], self._columns["unscored"]
        if outcome == "correct":
            return correct
        if outcome == "wrong":
            return ~correct & ~unscored
        if outcome == "unscored":
            return unscored
        code = self._kinds.code.get(outcome)
        return self._columns["error"] == code if code else np.zeros(len(self), np.bool_)

    def _perturbed(self, perturbation: str) -> np.ndarray:
        """The attempts at originals (ORIGINAL), or at variants of this perturbation kind."""
        code = 0 if perturbation == ORIGINAL else self._perturbations.code.get(perturbation, -1)
        kinds = np.array(self._sample_kinds, np.int32)
        result: np.ndarray = kinds[self._columns["sample"]] == code
        return result

    def _on_worker(self, worker: str) -> np.ndarray:
        """The attempts with a model call on this worker."""
        mask = np.zeros(len(self), np.bool_)
        code = self._worker_names.code.get(worker)
        if code is not None:
            mask[self._worker_rows[self._worker_codes == code]] = True
        return mask

    def _matches(self, text: str) -> np.ndarray:
        """The attempts whose sample's question or whose own answer contains `text`."""
        asked = np.fromiter((text in q for q in self._questions), np.bool_, len(self._questions))
        answered = np.fromiter((text in a for a in self._answers), np.bool_, len(self._answers))
        result: np.ndarray = asked[self._columns["sample"]] | answered
        return result

    def _sort_key(self, sort: str) -> np.ndarray:
        """Per attempt, a number whose order is the column's order."""
        if sort == "row":
            return np.arange(len(self))
        if sort == "sample_id":
            return _ranks(self._samples.names)[self._columns["sample"]]
        if sort == "error_kind":
            return _ranks(self._kinds.names)[self._columns["error"]]
        if sort == "workers":
            return self._first_worker_ranks()
        return self._columns[sort]

    def _first_worker_ranks(self) -> np.ndarray:
        """Per attempt, the alphabetical place of the first worker it called; -1 for none."""
        # Worker pairs are appended in row order, so each row's first pair is its first call.
        rows, first = np.unique(self._worker_rows, return_index=True)
        key = np.full(len(self), -1, np.int64)
        key[rows] = _ranks(self._worker_names.names)[self._worker_codes[first]]
        return key

    def _rows_at(self, indexes: np.ndarray) -> list[Row]:
        """The attempts at these indexes, their lines read in one open of the file."""
        if not len(indexes):
            return []  # a run may have no file yet
        with open(self.path, "rb") as file:
            return [self._row(file, int(i)) for i in indexes]

    def _row(self, file: BinaryIO, index: int) -> Row:
        """One attempt, read from its line through the record's schema check."""
        where = f"{self.path} at byte {int(self._columns['offset'][index])}"
        record = AttemptRecord.from_line(self._read_at(file, index), where)
        # Worker pairs are appended in row order, so a row's pairs are one sorted run.
        start, stop = np.searchsorted(self._worker_rows, [index, index + 1])
        codes = self._worker_codes[start:stop]
        workers = tuple(self._worker_names.names[int(code)] for code in codes)
        return Row.of(index, workers, record)

    def origin(self, sample_id: str) -> tuple[str | None, str | None]:
        """The original a sample perturbs and the perturbation; (None, None) for an original."""
        code = self._samples.code.get(sample_id)
        if code is None:
            return None, None
        return self._origins[code], self._perturbations.names[self._sample_kinds[code]] or None

    def variants_of(self, sample_id: str) -> list[tuple[str, str]]:
        """The variants of an original seen so far, as (sample id, perturbation)."""
        return [
            (name, self._perturbations.names[kind])
            for name, origin, kind in zip(
                self._samples.names, self._origins, self._sample_kinds, strict=True
            )
            if origin == sample_id
        ]

    def outcomes(self) -> Outcomes:
        """A snapshot of every attempt's outcome and of what each sample perturbs."""
        names = self._perturbations.names
        return Outcomes(
            sample=self._columns["sample"],
            attempt=self._columns["attempt"],
            correct=self._columns["correct"],
            scored=~self._columns["unscored"],
            samples=list(self._samples.names),
            origins=list(self._origins),
            kinds=[names[kind] or None for kind in self._sample_kinds],
        )


def _ranks(names: list[str]) -> np.ndarray:
    """Each name's place in alphabetical order, by its code."""
    ranks = np.empty(len(names), np.int64)
    ranks[np.argsort(np.array(names, dtype=object), kind="stable")] = np.arange(len(names))
    return ranks
