"""Simulated training runs for bench/adaptive.py: a curve of true accuracy, and the outcome of
every attempt a probe or a full evaluation makes on it, item by item.

Each item has a difficulty (a logit); a checkpoint of true accuracy p answers item i right
with probability sigmoid(theta - b_i), theta chosen so the items average p. Two checkpoints
thus agree on the easy and the hard items and differ on the middle ones, as real ones do, and
every attempt is a fresh draw.

A checkpoint's true accuracy is the scenario's trend plus jitter of its own, drawn afresh at
every checkpoint (WOBBLE, and the noisy scenario's swings): real for that checkpoint, gone at
the next, so a schedule is judged on the trend's moves (bench/adaptive.py).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

STEPS = 2000
EVERY = 10  # training steps between checkpoints
ITEMS = 1319  # the full evaluation's items (GSM8K's test set)
# Standard deviation of the items' difficulty, in logits: at 2.5 two attempts of a 0.6 model
# agree on 75% of the items and a quarter of the items are near-certain either way.
SPREAD = 2.5
WOBBLE = 0.01  # standard deviation of the true accuracy between neighbouring checkpoints

Curve = Callable[[int], float]  # true accuracy at a training step


def steady_climb(rng: random.Random) -> Curve:
    """From 0.2 to 0.6 or 0.7, at the same pace all run long."""
    top = rng.uniform(0.6, 0.7)
    return lambda step: 0.2 + (top - 0.2) * step / STEPS


def early_plateau(rng: random.Random) -> Curve:
    """A fast rise from 0.2 to 0.7 (time constant 50-150 steps), then flat."""
    tau = rng.uniform(50, 150)
    return lambda step: 0.2 + 0.5 * (1 - math.exp(-step / tau))


def late_collapse(rng: random.Random) -> Curve:
    """The early plateau, then a fall of 0.3 over 30 steps starting between 1,300 and 1,800."""
    trained, onset = early_plateau(rng), rng.randrange(1300, 1800)
    return lambda step: trained(step) - 0.3 * min(max((step - onset) / 30, 0.0), 1.0)


def noisy(rng: random.Random) -> Curve:
    """A slow rise from 0.4 to 0.55, with large swings between checkpoints (SWINGS)."""
    return lambda step: 0.4 + 0.15 * step / STEPS


def step_change(rng: random.Random) -> Curve:
    """A trained model at 0.5 that jumps to 0.65 between steps 500 and 1,500."""
    at = rng.randrange(500, 1500)
    return lambda step: 0.5 if step < at else 0.65


Scenario = Callable[[random.Random], Curve]  # a run's trend, drawn from its seed
SCENARIOS: dict[str, Scenario] = {
    "steady climb": steady_climb,
    "early plateau": early_plateau,
    "late collapse": late_collapse,
    "noisy": noisy,
    "step change": step_change,
}
SWINGS: dict[Scenario, float] = {noisy: 0.03}  # jitter of the scenario's own, beyond WOBBLE


@dataclass
class TrainingRun:
    """One simulated run: each checkpoint's true accuracy, and attempts drawn on demand."""

    steps: list[int]
    true: list[float]
    trend: list[float]  # the true accuracy less each checkpoint's jitter
    thetas: list[float]
    difficulty: np.ndarray
    rng: np.random.Generator
    played: int = field(default=0)  # items attempted so far, probes and full evaluations

    def outcomes(self, index: int, items: np.ndarray) -> np.ndarray:
        """Fresh attempts of the checkpoint at `index` on `items`: 1.0 right, 0.0 wrong."""
        self.played += len(items)
        chance = 1 / (1 + np.exp(self.difficulty[items] - self.thetas[index]))
        return (self.rng.random(len(items)) < chance).astype(float)


def simulate(scenario: Scenario, seed: str, spread: float = SPREAD) -> TrainingRun:
    """A run of `scenario` whose every draw follows from `seed`; items of `spread` logits."""
    rng = random.Random(seed)
    curve = scenario(rng)
    jitter = math.hypot(WOBBLE, SWINGS.get(scenario, 0.0))
    steps = list(range(0, STEPS + 1, EVERY))
    trend = [_clip(curve(s)) for s in steps]
    true = [_clip(t + rng.gauss(0, jitter)) for t in trend]
    numbers = np.random.default_rng(rng.getrandbits(64))
    difficulty = numbers.normal(0, spread, ITEMS)
    thetas = [_theta(difficulty, p) for p in true]
    return TrainingRun(steps, true, trend, thetas, difficulty, numbers)


def _clip(accuracy: float) -> float:
    return min(max(accuracy, 0.02), 0.98)


def _theta(difficulty: np.ndarray, accuracy: float) -> float:
    """The ability at which the items' mean chance of a right answer is `accuracy`."""
    low, high = -20.0, 20.0
    for _ in range(50):
        middle = (low + high) / 2
        if np.mean(1 / (1 + np.exp(difficulty - middle))) < accuracy:
            low = middle
        else:
            high = middle
    return (low + high) / 2
