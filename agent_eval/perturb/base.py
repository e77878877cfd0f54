"""The perturbation contract: a sample and a seeded random source in, a variant (or None) out.

A perturbation returns None for a sample it cannot perturb faithfully (a GSM8K solution whose
calculator annotations cannot be recomputed): that sample gets no variant of its kind, never one
with a wrong gold. Plug-ins are `package.module:function` or an `agent_eval.perturbations`
entry point.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from agent_eval.data import Sample
from agent_eval.registry import Registry


@dataclass(frozen=True)
class Variant:
    """A perturbed problem: its question, and its gold answer in the dataset's own form."""

    question: str
    answer: str


Perturbation = Callable[[Sample, random.Random], Variant | None]

PERTURBATIONS: Registry[Perturbation] = Registry(
    "perturbation",
    "agent_eval.perturbations",
    {
        "numbers": "agent_eval.perturb.numbers:new_numbers",
        "names": "agent_eval.perturb.names:new_names",
        "distractor": "agent_eval.perturb.distractor:add_distractor",
    },
    own="package.module:function",
)


def load_perturbation(spec: str) -> Perturbation:
    """A perturbation by built-in name, `package.module:function` or entry point."""
    return PERTURBATIONS.load(spec)
