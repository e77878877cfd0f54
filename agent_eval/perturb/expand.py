"""A dataset with each sample's perturbed variants after it, seeded and deterministic."""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Sequence

from agent_eval.data import DataError, Item, Sample
from agent_eval.perturb.base import load_perturbation

SEPARATOR = "~"
"""Between an original's id and the perturbation in its variant's id: `gsm8k-17~numbers`."""


def perturbed(items: Iterable[Item], kinds: Sequence[str], seed: int) -> Iterator[Item]:
    """Each sample, then its variant of each kind that can perturb it (a kind that cannot
    gives none: the original is counted as skipped for it, never given a wrong gold)."""
    perturbations = [(kind, load_perturbation(kind)) for kind in kinds]
    for item in items:
        if not isinstance(item, Sample):
            raise DataError(
                f"dataset.perturb perturbs single-question samples; {item.id!r} is a multi-turn "
                "session: leave out --perturb for session datasets"
            )
        yield item
        if item.question is None:
            continue  # a sample given as chat messages has no question text to perturb
        for kind, perturb in perturbations:
            variant = perturb(item, variant_random(seed, item.id, kind))
            if variant is not None:
                yield Sample(
                    id=f"{item.id}{SEPARATOR}{kind}",
                    question=variant.question,
                    answer=variant.answer,
                    metadata=item.metadata,
                    variant_of=item.id,
                    perturbation=kind,
                )


def variant_random(seed: int, sample_id: str, kind: str) -> random.Random:
    """The random source of one sample's variant of one kind: the same for the same run seed."""
    return random.Random(f"{seed}:{sample_id}:{kind}")
