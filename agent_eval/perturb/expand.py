"""A dataset with each sample's perturbed variants after it, seeded and deterministic."""

from __future__ import annotations

import dataclasses
import functools
import random
from collections.abc import Callable, Iterable, Iterator, Sequence

from agent_eval.data import DataError, Item, Sample
from agent_eval.data.edits import SampleEdits
from agent_eval.data.ids import unique_ids
from agent_eval.perturb.base import Perturbation, Variant, load_perturbation
from agent_eval.perturb.edited import EDITED

SamplePerturbation = Callable[[Sample, random.Random], Sample | None]

SEPARATOR = "~"
"""Between an original's id and the perturbation in its variant's id: `gsm8k-17~numbers`."""


def perturbed(
    items: Iterable[Item], kinds: Sequence[str], seed: int, edits: SampleEdits | None = None
) -> Iterator[Item]:
    """Each sample, then its variant of each kind that can perturb it (a kind that cannot
    gives none: the original is counted as skipped for it, never given a wrong gold).
    `edits`: a benchmark's, through which alone its samples are perturbed.

    Raises:
        DataError: (while iterating) a session, a plug-in's failure, a plug-in kind on a
            benchmark's samples, or a row whose id is the one a variant gets (`ID~KIND`).
    """
    suffixes = ", ".join(f"'{SEPARATOR}{kind}'" for kind in kinds)
    advice = f"ids ending in {suffixes} are the ids of --perturb's variants: rename that row"
    return unique_ids(_with_variants(items, kinds, seed, edits), advice)


def _with_variants(
    items: Iterable[Item], kinds: Sequence[str], seed: int, edits: SampleEdits | None
) -> Iterator[Item]:
    perturbations = [(kind, _perturbation(kind, edits)) for kind in kinds]
    for item in items:
        if not isinstance(item, Sample):
            raise DataError(
                f"dataset.perturb perturbs single-question samples; {item.id!r} is a multi-turn "
                "session: leave out --perturb for session datasets"
            )
        yield item
        for kind, perturb in perturbations:
            variant = _variant(perturb, kind, item, seed)
            if variant is not None:
                yield dataclasses.replace(
                    variant,
                    id=f"{item.id}{SEPARATOR}{kind}",
                    variant_of=item.id,
                    perturbation=kind,
                    origin=item.origin,
                )


def _perturbation(kind: str, edits: SampleEdits | None) -> SamplePerturbation:
    """What makes one sample's variant of `kind`: through the benchmark's edits if any."""
    if edits is None:
        return functools.partial(_from_question, load_perturbation(kind))
    edited = EDITED.get(kind)
    if edited is None:
        raise DataError(
            f"perturbation {kind!r} rewrites a question and its answer, which would not change "
            f"what a benchmark's runner plays or its gold: use {', '.join(EDITED)} on a benchmark"
        )
    return functools.partial(edited, edits)


def _from_question(perturb: Perturbation, sample: Sample, rng: random.Random) -> Sample | None:
    """The variant a question perturbation gives, as a sample (messages left out: a sample
    given as messages has no question text to perturb)."""
    if sample.question is None:
        return None
    variant = perturb(sample, rng)
    if variant is not None and not isinstance(variant, Variant):
        raise _NotAVariant(type(variant).__name__)
    if variant is None:
        return None
    return Sample(sample.id, variant.question, variant.answer, metadata=sample.metadata)


class _NotAVariant(Exception):
    """A plug-in returned something else than a Variant or None."""


def _variant(perturb: SamplePerturbation, kind: str, sample: Sample, seed: int) -> Sample | None:
    """`perturb`'s variant of `sample`; a plug-in that raises or returns something else is
    named with the sample, not a traceback."""
    try:
        return perturb(sample, variant_random(seed, sample.id, kind))
    except _NotAVariant as returned:
        raise DataError(
            f"perturbation {kind!r} returned {returned} for sample {sample.id!r}; "
            "it must return agent_eval.perturb.Variant(question, answer) or None"
        ) from None
    except Exception as exc:  # a plug-in's bug: the user's to fix, so say whose and where
        raise DataError(
            f"perturbation {kind!r} failed on sample {sample.id!r}: {type(exc).__name__}: {exc}"
        ) from exc


def variant_random(seed: int, sample_id: str, kind: str) -> random.Random:
    """The random source of one sample's variant of one kind: the same for the same run seed."""
    return random.Random(f"{seed}:{sample_id}:{kind}")
