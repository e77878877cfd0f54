"""Stream rows from .jsonl and .parquet files one at a time, so memory stays flat with file size."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_eval.data.errors import DataError
from agent_eval.data.records import Origin
from agent_eval.data.rows import RawRow

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

SUFFIXES = (".jsonl", ".parquet")
# Rows per parquet batch: large enough to read fast, small enough to keep memory flat.
_PARQUET_BATCH = 256


def read_file(path: Path) -> Iterator[RawRow]:
    """Rows of a .jsonl or .parquet file; a missing file or reader fails now, not mid-run."""
    if path.suffix not in SUFFIXES:
        raise DataError(f"cannot read {path}: use a .jsonl or .parquet file")
    if not path.is_file():
        raise DataError(f"data file {path} does not exist")
    return read_jsonl(path, str(path)) if path.suffix == ".jsonl" else read_parquet(path)


def read_jsonl(file: Traversable, source: str) -> Iterator[RawRow]:
    """One row per non-blank line, numbered by line in the file."""
    with file.open("rb") as lines:
        for number, raw in enumerate(lines, start=1):
            origin = Origin(source, "line", number)
            try:
                text = raw.decode("utf-8").lstrip("\ufeff").strip()
            except UnicodeDecodeError:
                raise DataError(f"{origin}: not UTF-8 text") from None
            if not text:
                continue
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise DataError(
                    f"{origin}: not valid JSON ({exc.msg}, column {exc.colno})"
                ) from None
            yield RawRow(origin, data)


def read_parquet(path: Path) -> Iterator[RawRow]:
    """Rows of a parquet file in small batches; needs pyarrow, which is optional."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError(
            f"reading {path} needs pyarrow, which is not installed: "
            "pip install pyarrow, or convert the file to .jsonl"
        ) from None
    try:
        parquet = pq.ParquetFile(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise DataError(f"{path} is not a readable parquet file: {exc}") from None
    return _parquet_rows(parquet, str(path))


def _parquet_rows(parquet: Any, source: str) -> Iterator[RawRow]:
    batches = (batch.to_pylist() for batch in parquet.iter_batches(batch_size=_PARQUET_BATCH))
    yield from read_records((row for batch in batches for row in batch), source)


def read_records(records: Iterable[Mapping[str, Any] | object], source: str) -> Iterator[RawRow]:
    """Rows from any iterable of records (a parquet file, a hub dataset), numbered from 1."""
    for number, record in enumerate(records, start=1):
        data = dict(record) if isinstance(record, Mapping) else record
        yield RawRow(Origin(source, "row", number), data)
