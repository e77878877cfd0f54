"""Learning-curve forecasts: the curve that fits is chosen, it forecasts where the truth goes,
its band holds the truth, and a saturating curve says where it levels off."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agent_eval.trigger.forecast import Point, forecast

ITEMS = 1319
NOISE = math.sqrt(0.25 / ITEMS)  # a full evaluation's standard error at accuracy 0.5


def scores(curve, steps: range, seed: int = 0) -> list[Point]:  # type: ignore[no-untyped-def]
    """A full evaluation of `curve` at each of `steps`, with its sampling noise."""
    rng = np.random.default_rng(seed)
    return [Point(s, curve(s) + rng.normal(0, NOISE), ITEMS) for s in steps]


def rising(step: float) -> float:
    return 0.2 + 0.5 * (1 - math.exp(-step / 300))


def jumping(step: float) -> float:
    return 0.5 if step < 900 else 0.65


def collapsing(step: float) -> float:
    return rising(step) - (0.3 if step >= 1500 else 0.0)


@pytest.mark.parametrize(
    ("curve", "steps", "chosen"),
    [
        (rising, range(0, 700, 50), "saturating"),
        (lambda s: 0.3 + 0.0002 * s, range(0, 900, 100), "line"),
        (lambda s: 0.55, range(0, 1000, 100), "flat"),
        (jumping, range(0, 1300, 100), "change point"),
        (collapsing, range(0, 1600, 100), "change point"),
    ],
    ids=["rising", "line", "flat", "jump", "collapse after a rise"],
)
def test_the_curve_that_fits_forecasts_inside_its_band(curve, steps, chosen) -> None:  # type: ignore[no-untyped-def]
    points = scores(curve, steps)
    ahead = [steps[-1] + 10, steps[-1] + 50]
    found = forecast(points, ahead)
    assert found.curve == chosen
    for step, mean, low, high in zip(ahead, found.mean, found.low, found.high, strict=True):
        assert abs(mean - curve(step)) < 0.03
        assert low - 3 * NOISE <= curve(step) <= high + 3 * NOISE
        assert low <= mean <= high


def test_a_rising_curve_says_its_plateau_and_when_it_settles() -> None:
    # Seen up to step 360 of a curve of time constant 300: the plateau is a far guess.
    early = forecast(scores(rising, range(0, 400, 40)), [1000])
    assert early.curve == "saturating" and early.plateau is not None
    assert abs(early.plateau - 0.7) < 0.08 and early.low[0] <= rising(1000) <= early.high[0]
    # 0.5 * exp(-t / 300) < 0.05 from t = 300 ln 10, about 690; it is still ahead.
    assert early.settles_at is not None and 360 < early.settles_at < 1000
    settled = forecast(scores(rising, range(0, 2000, 100)), [2100])
    assert settled.settles_at is None and settled.plateau == pytest.approx(0.7, abs=0.02)


def test_the_band_widens_with_the_horizon_and_the_noise() -> None:
    near = forecast(scores(rising, range(0, 700, 50)), [710, 1400])
    assert near.high[1] - near.low[1] >= near.high[0] - near.low[0]
    # Probes of 50 samples: seven times the noise of a full evaluation.
    rng = np.random.default_rng(1)
    few = [Point(s, rising(s) + rng.normal(0, math.sqrt(0.25 / 50)), 50) for s in range(0, 700, 50)]
    noisy = forecast(few, [710])
    assert noisy.high[0] - noisy.low[0] > 2 * (near.high[0] - near.low[0])
