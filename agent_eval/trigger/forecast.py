"""Learning-curve forecasts from the scores seen so far: where the curve goes, with a band.

Four curves are fitted by weighted least squares (each score weighs as many samples as it
played): flat, a line, a saturating rise or fall `a - b * exp(-step / tau)`, and that curve
with a level that shifts once (a change point: a jump or a collapse). The one with the lowest BIC
forecasts; its band comes from refitting it to its own fit plus resampled residuals (a
residual bootstrap).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

CurveName = Literal["flat", "line", "saturating", "change point"]
RESAMPLES = 200
BAND = (5.0, 95.0)  # percentiles of the bootstrap forecasts: a 90% band
TAUS = 24  # time constants tried, log-spaced over the steps seen
CURVES: tuple[CurveName, ...] = ("flat", "line", "saturating", "change point")
# A change point is the best of every split: BIC counts it as this many parameters more, or a
# split at the noisiest point would win on a curve that never shifted.
SEARCH_PENALTY = 2
# A forecast weighs a line against flat at least: with three points only flat could be fitted
# (two points more than parameters, below), a constant through a rise, forecasting its middle.
MIN_POINTS = 4


@dataclass(frozen=True)
class Point:
    """One score seen: the step, the accuracy, and the samples it came from."""

    step: int
    score: float
    samples: int


@dataclass(frozen=True)
class Forecast:
    """The chosen curve's forecast at `steps`, its 90% band, and what it says of the future.

    `plateau`: where a saturating curve levels off; `settles_at`: the step after which it moves
    less than `settle` more (None for other curves, or when it already has)."""

    curve: CurveName
    steps: list[int]
    mean: list[float]
    low: list[float]
    high: list[float]
    plateau: float | None
    settles_at: int | None


@dataclass(frozen=True)
class _Fit:
    curve: CurveName
    parameters: tuple[float, ...]
    sse: float
    size: int  # parameters, counting tau, and the change point as 1 + SEARCH_PENALTY


def forecast(points: Sequence[Point], steps: Sequence[int], settle: float = 0.05) -> Forecast:
    """Fit the curves to `points` (at least MIN_POINTS) and forecast the accuracy at `steps`."""
    x = np.array([p.step for p in points], float)
    y = np.array([p.score for p in points], float)
    w = np.array([p.samples for p in points], float)
    best = _choose(x, y, w)
    ahead = np.array(steps, float)
    fitted = _predict(best, x)
    # Residuals scaled to one sample's weight, so each point draws noise of its own size.
    scale = np.sqrt(w / w.mean())
    rng = np.random.default_rng(len(points))
    noise = rng.choice((y - fitted) * scale, (len(y), RESAMPLES)) / scale[:, None]
    draws = np.stack([_predict(f, ahead) for f in _fits(best.curve, x, fitted[:, None] + noise, w)])
    low, high = np.percentile(np.clip(draws, 0, 1), BAND, axis=0)
    mean = np.clip(_predict(best, ahead), 0, 1)
    plateau, settles = _settling(best, settle, int(x.max()))
    return Forecast(best.curve, list(steps), mean.tolist(), low.tolist(), high.tolist(),
                    plateau, settles)  # fmt: skip


def _choose(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> _Fit:
    """The curve with the lowest BIC (the weighted residuals' scale estimated per curve)."""
    fits = [_fits(curve, x, y[:, None], w)[0] for curve in CURVES]
    # Two points more than parameters at least: a curve through all but one point fits them
    # almost exactly, and its tiny residuals would win the BIC and shrink the band to nothing.
    fits = [f for f in fits if f.size < len(x) - 1]
    return min(fits, key=lambda f: len(x) * math.log(max(f.sse, 1e-12) / len(x))
               + f.size * math.log(len(x)))  # fmt: skip


def _fits(curve: CurveName, x: np.ndarray, ys: np.ndarray, w: np.ndarray) -> list[_Fit]:
    """The best fit of `curve` to each column of `ys`: weighted least squares for each value
    of its nonlinear parameter (tau, the change point) tried, all columns at once."""
    best_sse = np.full(ys.shape[1], np.inf)
    best: list[_Fit | None] = [None] * ys.shape[1]
    root = np.sqrt(w)
    for columns, extra in _designs(curve, x):
        design = np.stack(columns, axis=1)
        coefficients = np.linalg.pinv(design * root[:, None]) @ (ys * root[:, None])
        sse = np.sum(w[:, None] * (ys - design @ coefficients) ** 2, axis=0)
        for column in np.flatnonzero(sse < best_sse):
            parameters = (*coefficients[:, column].tolist(), *extra)
            size = len(parameters) + (SEARCH_PENALTY if curve == "change point" else 0)
            best[column] = _Fit(curve, parameters, float(sse[column]), size)
        best_sse = np.minimum(best_sse, sse)
    return [f for f in best if f is not None]


def _designs(curve: CurveName, x: np.ndarray) -> list[tuple[list[np.ndarray], tuple[float, ...]]]:
    """The curve's design columns for each value of its nonlinear parameter."""
    one = np.ones_like(x)
    if curve == "flat":
        return [([one], ())]
    if curve == "line":
        return [([one, x], ())]
    span = max(x.max() - x.min(), 1.0)
    taus = np.geomspace(span / 20, span * 5, TAUS)
    if curve == "saturating":
        return [([one, -np.exp(-x / tau)], (tau,)) for tau in taus]
    # A saturating curve whose level shifts once; a shift at the last point is allowed: after
    # a jump or a collapse, its level is the news.
    return [
        ([one, -np.exp(-x / tau), (x >= bend).astype(float)], (tau, bend))
        for tau in taus
        for bend in x[1:]
    ]


def _predict(fit: _Fit, x: np.ndarray) -> np.ndarray:
    p = fit.parameters
    if fit.curve == "flat":
        return np.full_like(x, p[0], dtype=float)
    if fit.curve == "line":
        return p[0] + p[1] * x
    if fit.curve == "saturating":
        return p[0] - p[1] * np.exp(-x / p[2])
    return p[0] - p[1] * np.exp(-x / p[3]) + p[2] * (x >= p[4])


def _settling(fit: _Fit, settle: float, last: int) -> tuple[float | None, int | None]:
    """A saturating curve's plateau, and the step from which it moves less than `settle`."""
    if fit.curve != "saturating":
        return None, None
    plateau, rise, tau = fit.parameters
    if abs(rise) <= settle:
        return plateau, None
    settles = tau * math.log(abs(rise) / settle)
    return plateau, int(settles) if settles > last else None
