"""A dataset with each sample's perturbed variants after it, seeded and deterministic."""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Sequence

from agent_eval.data import DataError, Item, Sample
from agent_eval.data.ids import unique_ids
from agent_eval.perturb.base import Perturbation, Variant, load_perturbation

SEPARATOR = "~"
"""Between an original's id and the perturbation in its variant's id: `gsm8k-17~numbers`."""


def perturbed(items: Iterable[Item], kinds: Sequence[str], seed: int) -> Iterator[Item]:
    """Each sample, then its variant of each kind that can perturb it (a kind that cannot
    gives none: the original is counted as skipped for it, never given a wrong gold).

    Raises:
        DataError: (while iterating) a session, a plug-in's failure, or a row whose id is the
            one a variant gets (`ID~KIND`).
    """
    suffixes = ", ".join(f"'{SEPARATOR}{kind}'" for kind in kinds)
    advice = f"ids ending in {suffixes} are the ids of --perturb's variants: rename that row"
    return unique_ids(_with_variants(items, kinds, seed), advice)


def _with_variants(items: Iterable[Item], kinds: Sequence[str], seed: int) -> Iterator[Item]:
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
            variant = _variant(perturb, kind, item, seed)
            if variant is not None:
                yield Sample(
                    id=f"{item.id}{SEPARATOR}{kind}",
                    question=variant.question,
                    answer=variant.answer,
                    metadata=item.metadata,
                    variant_of=item.id,
                    perturbation=kind,
                    origin=item.origin,
                )


def _variant(perturb: Perturbation, kind: str, sample: Sample, seed: int) -> Variant | None:
    """The perturbation's variant of `sample`; a plug-in that raises or returns something
    else is named with the sample, not a traceback."""
    try:
        variant = perturb(sample, variant_random(seed, sample.id, kind))
    except Exception as exc:  # a plug-in's bug: the user's to fix, so say whose and where
        raise DataError(
            f"perturbation {kind!r} failed on sample {sample.id!r}: {type(exc).__name__}: {exc}"
        ) from exc
    if variant is not None and not isinstance(variant, Variant):
        raise DataError(
            f"perturbation {kind!r} returned {type(variant).__name__} for sample {sample.id!r}; "
            "it must return agent_eval.perturb.Variant(question, answer) or None"
        )
    return variant


def variant_random(seed: int, sample_id: str, kind: str) -> random.Random:
    """The random source of one sample's variant of one kind: the same for the same run seed."""
    return random.Random(f"{seed}:{sample_id}:{kind}")
