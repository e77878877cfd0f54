"""Runs on disk and `agent-eval report` over them, and a parser of the report's HTML."""

from __future__ import annotations

import os
from collections import defaultdict
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from agent_eval.cli import app
from agent_eval.results.record import AttemptRecord
from agent_eval.run.config import load_run_config, save_run_config

EVIL = "<script>alert(1)</script>"


def record(sample_id: str, attempt: int, correct: bool, **fields: Any) -> AttemptRecord:
    """One attempt as the engine records it."""
    turns = fields.get("turn_rewards")
    return AttemptRecord(
        sample_id=sample_id,
        attempt=attempt,
        seed=7,
        session_id=f"{sample_id}-{attempt}",
        reward=float(correct),
        correct=correct,
        answer=fields.get("answer", "42" if correct else "41"),
        turn_rewards=turns,
        turn_answers=None if turns is None else ["42"] * len(turns),
        challenge_turns=None if turns is None else [],
        latency_s=fields.get("latency_s", 1.0 + attempt),
        prompt_tokens=100,
        completion_tokens=20 + 10 * attempt,
        model_calls=2,
        tool_calls=1,
        tool_errors=0,
        error=fields.get("error"),
        trajectory={"messages": []},
    )


def make_run(
    path: Path, records: list[AttemptRecord], n_samples: int, agent: str = "math_calculator"
) -> Path:
    """A run directory as `agent-eval run` leaves it: config.yaml and samples.jsonl."""
    path.mkdir(parents=True)
    flags = {"eval.n_samples": n_samples, "agent.name": agent}
    save_run_config(load_run_config(None, flags, [f"output.dir={path}"]), path)
    (path / "samples.jsonl").write_bytes(b"".join(r.to_line() for r in records))
    return path


def binary_run(path: Path, correct: int, total: int) -> Path:
    """`total` samples, one attempt each, the first `correct` of them right."""
    records = [record(f"q{i}", 0, i < correct, latency_s=1.0 + i % 3) for i in range(total)]
    return make_run(path, records, n_samples=1)


class Page(HTMLParser):
    """What the tests look for: figures and what they hold, outside references, table rows."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.figures: dict[str, list[str]] = defaultdict(list)
        self.figure_text: dict[str, list[str]] = defaultdict(list)
        self.references: list[str] = []
        self.tags: set[str] = set()
        self.rows: dict[str, list[list[str]]] = defaultdict(list)
        self.text: list[str] = []
        self._figure: str | None = None
        self._table: str | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self.tags.add(tag)
        self.references += [v or "" for k, v in attrs if k in ("src", "href", "xlink:href")]
        if tag == "figure":
            self._figure = found["id"]
        elif self._figure is not None:
            self.figures[self._figure].append(tag)
        if tag == "table":
            self._table = found.get("id")
        elif tag == "tr" and self._table is not None:
            self.rows[self._table].append([])

    def handle_endtag(self, tag: str) -> None:
        if tag == "figure":
            self._figure = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._figure is not None:
            self.figure_text[self._figure].append(data)
        if self._table is not None and self.rows[self._table] and data.strip():
            self.rows[self._table][-1].append(data.strip())

    def row(self, table: str, label: str) -> list[str]:
        return next(row for row in self.rows[table] if row and row[0] == label)


def report(*args: str | Path) -> Result:
    """`agent-eval report ARGS`, run in this process."""
    return CliRunner().invoke(app, ["report", *map(str, args)])


def table_row(output: str, label: str) -> list[str]:
    """The printed table row starting with `label`, split into cells."""
    line = next(line for line in output.splitlines() if line.strip().startswith(label))
    return line.split()


def runs_of_one_agent(root: Path, count: int) -> list[Path]:
    """`count` runs under `root`, each finished a minute after the one before."""
    paths = [
        binary_run(root / f"math_calculator-2026120{i}", correct=i, total=5) for i in range(count)
    ]
    for minute, path in enumerate(paths):
        os.utime(path / "samples.jsonl", (1_800_000_000 + 60 * minute,) * 2)
    return paths
