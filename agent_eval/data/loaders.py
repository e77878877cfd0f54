"""Find a dataset by name or path and stream its samples or sessions.

Names come from one registry; a benchmark's datasets are `BENCHMARK:PART` (`bfcl:simple`), read
by its own module; a path to a .jsonl or .parquet file works too. GSM8K reads the
hub through `datasets` only when that package is installed and the hub answers; otherwise it
asks for --data-file. Nothing here loads a whole file.
"""

from __future__ import annotations

import difflib
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.resources import files
from itertools import islice
from pathlib import Path
from types import ModuleType

from agent_eval import installs
from agent_eval.data.errors import DataError
from agent_eval.data.ids import unique_ids
from agent_eval.data.readers import SUFFIXES, read_file, read_jsonl, read_records
from agent_eval.data.records import Item
from agent_eval.data.rows import Kind, RawRow, parse_row
from agent_eval.registry import Registry

# The hub probe gives up after this long: an offline machine must not wait on the network.
HUB_TIMEOUT = 3.0
_TRUTHY = {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class HubSource:
    """A split of a Hugging Face hub dataset."""

    path: str
    config: str | None
    split: str


@dataclass(frozen=True)
class DatasetSpec:
    """A named dataset: its row format and its default source (none means --data-file only)."""

    kind: Kind
    description: str
    shipped: str | None = None
    hub: HubSource | None = None


DATASETS: dict[str, DatasetSpec] = {
    "gsm8k": DatasetSpec(
        "gsm8k",
        "GSM8K test split: openai/gsm8k from the hub, or a local copy by --data-file",
        hub=HubSource("openai/gsm8k", "main", "test"),
    ),
    "gsm8k_mini": DatasetSpec(
        "gsm8k",
        "GSM8K-style problems with worked solutions, shipped with agent-eval",
        shipped="gsm8k_mini.jsonl",
    ),
    "word_problems": DatasetSpec(
        "gsm8k",
        "one-step word problems, half naming their operation: the embedded model's first run",
        shipped="word_problems.jsonl",
    ),
    "sessions_mini": DatasetSpec(
        "sessions",
        "multi-turn sessions with follow-ups and challenge turns, shipped with agent-eval",
        shipped="sessions_mini.jsonl",
    ),
    "jsonl": DatasetSpec("qa", "rows with question (or messages) and answer, from --data-file"),
    "sessions": DatasetSpec("sessions", "multi-turn rows with turns, from --data-file"),
}


BenchmarkItems = Callable[[str], Iterator[Item]]
"""A benchmark's items for the part of its dataset name after the colon; raises DataError for
a part it does not have, naming the parts it has."""

BENCHMARKS: Registry[BenchmarkItems] = Registry(
    "benchmark",
    "agent_eval.benchmarks",
    {
        "bfcl": "agent_eval.benchmarks.bfcl.datasets:bfcl_items",
        "agentdojo": "agent_eval.benchmarks.agentdojo.datasets:agentdojo_items",
    },
    own="package.module:function",
    installs=installs.BENCHMARKS,
)


def load_dataset(
    name_or_path: str, data_file: Path | None = None, limit: int | None = None
) -> Iterator[Item]:
    """Stream the first `limit` samples or sessions (all when None) of a dataset or file.

    Raises:
        DataError: unknown name, missing file or reader, no source for the dataset, or (while
            iterating) a malformed row, named by file, line and field, or an id given twice.
    """
    if limit is not None and limit < 0:
        raise DataError(f"limit must be 0 or more, got {limit}")
    benchmark = benchmark_of(name_or_path)
    if benchmark is not None:
        if data_file is not None:
            raise DataError(f"{name_or_path!r} comes with its package; leave out --data-file")
        part = name_or_path.partition(":")[2]
        return unique_ids(islice(BENCHMARKS.load(benchmark)(part), limit))
    rows, kind, dataset = _source(name_or_path, data_file)
    if limit is not None:
        rows = islice(rows, limit)  # stop reading the file after `limit` rows
    return unique_ids(_parse(rows, kind, dataset))


def benchmark_of(name: str) -> str | None:
    """The benchmark a dataset name such as `bfcl:simple` belongs to; None for other names."""
    benchmark, _, part = name.partition(":")
    return benchmark if part and benchmark in BENCHMARKS.names() else None


def dataset_file(name: str, data_file: Path | None) -> Path | None:
    """The user's file a dataset reads, as `_source` picks it; None for a shipped, hub or
    benchmark one."""
    if data_file is not None:
        return Path(data_file)
    return None if name in DATASETS or benchmark_of(name) else Path(name)


def _source(name: str, data_file: Path | None) -> tuple[Iterator[RawRow], Kind | None, str]:
    """Rows, their format (None: decided by the first row) and the id prefix."""
    spec = DATASETS.get(name)
    if spec is None:
        path = _as_path(name)
        if data_file is not None:
            raise DataError(f"give the file {name} either as the dataset or by --data-file")
        return read_file(path), None, path.stem
    if data_file is not None:
        return read_file(Path(data_file)), spec.kind, name
    if spec.shipped is not None:
        shipped = files("agent_eval.data").joinpath("samples").joinpath(spec.shipped)
        return read_jsonl(shipped, spec.shipped), spec.kind, name
    if spec.hub is not None:
        return _hub_rows(name, spec.hub), spec.kind, name
    raise DataError(f"dataset {name!r} reads a file: pass --data-file PATH (.jsonl or .parquet)")


def _as_path(name: str) -> Path:
    """`name` as a data file path, or an unknown-name error with the nearest known name."""
    path = Path(name)
    if path.suffix in SUFFIXES or path.exists():
        return path
    close = difflib.get_close_matches(name, DATASETS, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise DataError(
        f"unknown dataset {name!r}; {hint}datasets are {', '.join(DATASETS)}, "
        "or give a path to a .jsonl or .parquet file"
    )


def _parse(rows: Iterator[RawRow], kind: Kind | None, dataset: str) -> Iterator[Item]:
    for row in rows:
        if kind is None:
            kind = "sessions" if isinstance(row.data, dict) and "turns" in row.data else "qa"
        yield parse_row(row, kind, dataset)


def _hub_rows(name: str, hub: HubSource) -> Iterator[RawRow]:
    """Rows streamed from the hub, after checking now that the hub can be used at all."""
    offline = next((v for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE") if _env_on(v)), None)
    if offline:
        raise DataError(f"{offline} is set, so {_offline_hint(name, hub)}")
    try:
        import datasets
    except ImportError:
        raise DataError(
            f"the 'datasets' package is not installed, so {_offline_hint(name, hub)} "
            "(or pip install datasets)"
        ) from None
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    if not _hub_reachable(f"{endpoint}/api/datasets/{hub.path}"):
        raise DataError(
            f"the hub at {endpoint} did not answer within {HUB_TIMEOUT:g} s, "
            f"so {_offline_hint(name, hub)}"
        )
    return _stream_hub(datasets, name, hub)


def _stream_hub(datasets: ModuleType, name: str, hub: HubSource) -> Iterator[RawRow]:
    """Rows of the split, streamed so that neither memory nor disk grows with its size."""
    try:
        rows = datasets.load_dataset(hub.path, hub.config, split=hub.split, streaming=True)
        yield from read_records(rows, f"{hub.path}[{hub.split}]")
    except Exception as exc:  # any network or hub failure ends in the same next step
        raise DataError(
            f"loading {hub.path} from the hub failed ({exc}); {_offline_hint(name, hub)}"
        ) from exc


def _offline_hint(name: str, hub: HubSource) -> str:
    return (
        f"dataset {name!r} cannot come from the hub ({hub.path}): pass --data-file PATH with a "
        "local .jsonl or .parquet copy that has 'question' and 'answer' fields"
    )


def _env_on(variable: str) -> bool:
    return os.environ.get(variable, "").strip().lower() in _TRUTHY


def _hub_reachable(url: str) -> bool:
    """Whether the hub answers a HEAD request within HUB_TIMEOUT (DNS included)."""
    answered: list[bool] = []
    probe = threading.Thread(target=lambda: answered.append(_probe(url)), daemon=True)
    probe.start()
    probe.join(HUB_TIMEOUT)  # a thread, because urlopen's timeout does not cover DNS lookups
    return bool(answered and answered[0])


def _probe(url: str) -> bool:
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, method="HEAD"), timeout=HUB_TIMEOUT
        ):
            return True
    except urllib.error.HTTPError:
        return True  # the hub answered, even if with an error status
    except (OSError, ValueError):
        return False
