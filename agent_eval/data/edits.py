"""How a benchmark's samples may be edited without making their gold wrong: what `--perturb`
asks of a benchmark, which says per sample what a variant may change and makes the change.

Each benchmark's edits sit beside its datasets, named like them (`bfcl`, `agentdojo`); a
benchmark added by entry point adds its edits to `agent_eval.benchmark_edits`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from agent_eval import installs
from agent_eval.data.errors import DataError
from agent_eval.data.loaders import benchmark_of
from agent_eval.data.records import Sample
from agent_eval.registry import Registry


class SampleEdits(Protocol):
    """One benchmark's faithful edits. Each method that gives a sample gives None where the
    edit could make the gold wrong: that sample gets no variant of that kind."""

    def text(self, sample: Sample) -> str | None:
        """The user's words a variant may rewrite; None when no variant of any kind is sound."""

    def context(self, sample: Sample) -> str:
        """What else the model reads and the gold checks, for added words to keep clear of."""

    def swappable(self, sample: Sample) -> list[str]:
        """Words and numbers of `text` that are gold values too and may each be swapped for
        another of their kind, in the question and the gold alike."""

    def swapped(self, sample: Sample, swaps: Mapping[str, str]) -> Sample | None:
        """The sample with each swappable literal replaced by its new one everywhere the model
        reads it and the gold holds it."""

    def told(self, sample: Sample, text: str) -> Sample | None:
        """The sample with its user's words replaced by `text` (words added, none changed):
        the gold unchanged, what the runner plays changed with the question."""


BENCHMARK_EDITS: Registry[SampleEdits] = Registry(
    "benchmark edits",
    "agent_eval.benchmark_edits",
    {
        "bfcl": "agent_eval.benchmarks.bfcl.edits:EDITS",
        "agentdojo": "agent_eval.benchmarks.agentdojo.edits:EDITS",
    },
    own="package.module:object",
    installs=installs.BENCHMARKS,
)


def benchmark_edits(dataset: str) -> SampleEdits | None:
    """The edits of the benchmark a dataset name belongs to; None for a dataset of no benchmark.

    Raises: DataError for a benchmark that says nothing about how its samples may be edited.
    """
    benchmark = benchmark_of(dataset)
    if benchmark is None:
        return None
    if benchmark not in BENCHMARK_EDITS.names():
        raise DataError(
            f"benchmark {benchmark!r} does not say how its samples may be perturbed (no "
            "agent_eval.benchmark_edits entry point of that name): leave out --perturb"
        )
    return BENCHMARK_EDITS.load(benchmark)
