"""Perturbed variants of each problem (`dataset.perturb`): what robustness is measured on."""

from __future__ import annotations

from agent_eval.perturb.base import PERTURBATIONS, Perturbation, Variant, load_perturbation

__all__ = ["PERTURBATIONS", "Perturbation", "Variant", "load_perturbation"]
