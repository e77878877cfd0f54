"""A checkpoint's probe for the bounded trigger: the samples to play and the tests they feed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agent_eval.metrics.sequential import Comparison, SequentialComparison


class Probe:
    """One checkpoint's probe: the samples to play, in order, and the comparisons they feed."""

    def __init__(
        self,
        step: int,
        order: list[str],
        check: bool,
        baselines: Mapping[str, Mapping[str, float]],
        delta: float,
        alpha: float,
        drift: Sequence[tuple[int, float, float]] = (),
        reference_offset: float = 0.0,
    ) -> None:
        """`delta`: the smallest change worth a full evaluation; `alpha`: each test's error;
        `drift`: for a check, the steps ahead it covers and how far the curve may move by each
        (down and up, against here)."""
        self.step = step
        self.order = order
        self.check = check
        self._delta = delta
        self._baselines = baselines
        self._drift = drift
        self.reference_offset = reference_offset
        self._tests = {name: SequentialComparison(alpha, len(order)) for name in baselines}
        self.comparisons: dict[str, Comparison] = {n: t.state() for n, t in self._tests.items()}
        """This checkpoint against the last full evaluation ("reference"), and against the first
        ("baseline") and the best ones where they are others."""
        self.played = 0
        self._total = 0.0

    def add(self, sample_id: str, outcome: float) -> bool:
        """Take this checkpoint's outcome on one sample; True once the probe may stop."""
        for name, baseline in self._baselines.items():
            self.comparisons[name] = self._tests[name].add(outcome, baseline[sample_id])
        self.played += 1
        self._total += outcome
        return self.finished

    @property
    def score(self) -> float:
        """This checkpoint's mean outcome over the samples played."""
        return self._total / self.played if self.played else float("nan")

    @property
    def finished(self) -> bool:
        """Out of samples; a probe once the difference is known; a check once it has ruled a
        change of delta out, or has found one of more than delta / 2."""
        state = self.comparisons.get("reference")
        if state is None or state.pairs >= len(self.order):
            return True
        if not self.check:
            return state.verdict != "not yet known"
        return self.cleared or self.moved

    @property
    def moved(self) -> bool:
        """The comparison with the reference shows a change of more than delta / 2."""
        state, half = self.comparisons.get("reference"), self._delta / 2
        return state is not None and (state.low > half or state.high < -half)

    @property
    def cleared(self) -> bool:
        """The comparison with the reference rules out a change of delta or more, now and, with
        the forecast's drift added, at every step ahead the check covers."""
        return self.due is None

    @property
    def due(self) -> int | None:
        """The first step, this one or one ahead, where a change of delta is not ruled out (the
        comparison's bounds moved by the forecast's drift reach delta); None: nowhere."""
        state, delta = self.comparisons.get("reference"), self._delta
        if state is None:
            return self.step
        # Widened, never narrowed, by how far the reference's score may stand off the curve.
        below, above = min(self.reference_offset, 0.0), max(self.reference_offset, 0.0)
        for step, down, up in ((self.step, 0.0, 0.0), *self._drift):
            if not -delta < state.low + down + below or not state.high + up + above < delta:
                return step
        return None
