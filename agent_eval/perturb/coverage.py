"""How many of a dataset's samples each perturbation gives a variant: what `--perturb` plays."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agent_eval.data import Item, Sample


@dataclass(frozen=True)
class Coverage:
    """One perturbation kind: its variants, and the originals it could have perturbed."""

    kind: str
    variants: int
    originals: int

    @property
    def share(self) -> float:
        """The fraction of originals with a variant of this kind (0 for an empty dataset)."""
        return self.variants / self.originals if self.originals else 0.0


def coverage(items: Iterable[Item], kinds: Sequence[str]) -> list[Coverage]:
    """Per kind in `kinds`, the variants among `items` (a perturbed dataset) and its originals."""
    variants: Counter[str] = Counter()
    originals = 0
    for item in items:
        if isinstance(item, Sample) and item.perturbation is not None:
            variants[item.perturbation] += 1
        else:
            originals += 1
    return [Coverage(kind, variants[kind], originals) for kind in kinds]
