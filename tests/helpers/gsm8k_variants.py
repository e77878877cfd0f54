"""GSM8K's test set perturbed once a session as `agent-eval perturb` does it with seed 0: the
variants of each kind, and why `numbers` refused the problems it gave none."""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from dataclasses import dataclass

from agent_eval.data import Sample
from agent_eval.perturb.expand import perturbed
from tests.helpers.shared_data import gsm8k_path

KINDS = ["numbers", "names", "distractor"]


@dataclass(frozen=True)
class PerturbedGsm8k:
    """The originals, each followed by its variants, and `numbers`' refusals by reason."""

    originals: list[Sample]
    items: list[Sample]
    refusals: Counter[str]
    """Each reason the DEBUG log gives, its numbers written N, and how many problems it refused."""

    def variants(self, kind: str) -> list[Sample]:
        """The variants of one kind, in the originals' order."""
        return [item for item in self.items if item.perturbation == kind]


class _Reasons(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.found: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        reason = record.getMessage().split(": ", 2)[-1]
        self.found[re.sub(r"[\d/.-]+", "N", reason)] += 1


def gsm8k_samples() -> list[Sample]:
    """The GSM8K test set's problems, `gsm8k-0` on (skipped where the data is missing)."""
    rows = [json.loads(line) for line in gsm8k_path().read_text().splitlines()]
    return [Sample(f"gsm8k-{i}", row["question"], row["answer"]) for i, row in enumerate(rows)]


def perturbed_gsm8k() -> PerturbedGsm8k:
    """Every kind's variants of GSM8K with seed 0, and the reasons `numbers` logged."""
    originals = gsm8k_samples()
    logger = logging.getLogger("agent_eval.perturb.numbers")
    reasons, level = _Reasons(), logger.level
    logger.addHandler(reasons)
    logger.setLevel(logging.DEBUG)
    try:
        items = [item for item in perturbed(originals, KINDS, seed=0) if isinstance(item, Sample)]
    finally:
        logger.removeHandler(reasons)
        logger.setLevel(level)
    return PerturbedGsm8k(originals, items, reasons.found)
