"""Answers computed from runs' reports, kept until the catalog reads one of those runs afresh."""

from __future__ import annotations

import asyncio
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

from agent_eval.report.runs import Run
from agent_eval.view.catalog import KEPT

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Derived(Generic[K, V]):
    """The last KEPT answers by key, each computed once per version of the runs it reads.

    The runs are held weakly: the catalog decides how long a run's report lives, and hands
    out a new one once the run's files change, which is when an answer is computed again.
    """

    def __init__(self) -> None:
        self._kept: OrderedDict[K, tuple[tuple[weakref.ref[Run], ...], V]] = OrderedDict()
        self._locks: dict[K, asyncio.Lock] = {}

    async def get(
        self,
        key: K,
        reports: Callable[[], Awaitable[tuple[Run, ...]]],
        compute: Callable[..., V],
    ) -> V:
        """The answer for `key` over the runs `reports` gives: `compute(key, *runs)`, run in a
        thread when those runs are new."""
        async with self._locks.setdefault(key, asyncio.Lock()):  # one computation per key
            runs = await reports()
            kept = self._kept.pop(key, None)
            if kept is None or any(
                ref() is not run for ref, run in zip(kept[0], runs, strict=True)
            ):
                value = await asyncio.to_thread(compute, key, *runs)
                kept = (tuple(weakref.ref(run) for run in runs), value)
            self._kept[key] = kept
            while len(self._kept) > KEPT:
                dropped, _ = self._kept.popitem(last=False)
                self._locks.pop(dropped, None)
        return kept[1]


def _same(refs: tuple[weakref.ref[Run], ...], runs: tuple[Run, ...]) -> bool:
    """Whether the runs are the very reports an answer was computed from."""
    return all(ref() is run for ref, run in zip(refs, runs, strict=True))
