"""Say plainly when the bounds cannot help (most trivial, or nothing certified).

The CLI predicts in chunks, so the counts are tallied over chunks and the
message is printed once at the end.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

__all__ = ["UsefulnessTally"]

#: Share of trivial bounds (ε = 1 for every class) from which we warn.
TRIVIAL_SHARE_WARN = 0.5


class UsefulnessTally:
    """Counts over the chunks of one run: rows, trivial, certified, κ = 0, bias share.

    ``factors`` keeps, per non-vacuous row whose bound is trivial, the factor
    on the assumption's constant (L, or 1/γ) that would make some class's
    interval non-trivial: ``max_c (max(p̂_c, 1 − p̂_c) − sampling_c)/bias_c``
    (0 where the sampling term alone is too wide, so no L can help). Its
    median answers "what L would be needed" for half of those rows.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import PredictionInterval
    >>> iv = PredictionInterval.from_parts(
    ...     proba=np.array([[0.6, 0.4]]), bias=np.full((1, 2), 0.9), sampling=np.full((1, 2), 0.3),
    ...     kappa=np.array([4.0]), n_eff=np.array([3.0]), vacuous=np.array([False]), bandwidth=np.array([1.0]))
    >>> tally = UsefulnessTally(); tally.add(iv); tally.trivial
    1
    >>> round(float(np.median(tally.factors)), 3)  # (0.6 − 0.3) / 0.9
    0.333
    """

    def __init__(self) -> None:
        self.rows = self.trivial = self.certified = self.vacuous = 0
        self.bias_sum = 0.0
        self.bias_rows = 0
        self._factors: list[np.ndarray] = []

    def add(self, interval: Any) -> None:
        """Tally one chunk's :class:`~nwbound.PredictionInterval`."""
        n = len(interval)
        trivial = np.asarray(interval.trivial, dtype=bool)
        vacuous = np.asarray(interval.vacuous, dtype=bool)
        self.rows += n
        self.trivial += int(trivial.sum())
        self.certified += int(np.asarray(interval.certified).sum())
        self.vacuous += int(vacuous.sum())
        top = interval.predicted_index
        rows = np.arange(n)
        bias = np.asarray(interval.bias, dtype=np.float64)[rows, top]
        sampling = np.asarray(interval.sampling, dtype=np.float64)[rows, top]
        total = bias + sampling
        live = ~vacuous & (total > 0) & np.isfinite(total)
        self.bias_sum += float((bias[live] / total[live]).sum())
        self.bias_rows += int(live.sum())
        # A trivial row becomes non-trivial once some class has ε_c < max(p̂_c, 1 − p̂_c);
        # ε_c = bias_c + sampling_c and the bias scales with L (or 1/γ).
        stuck = live & trivial
        proba = np.asarray(interval.proba, dtype=np.float64)[stuck]
        b = np.asarray(interval.bias, dtype=np.float64)[stuck]
        target = np.maximum(proba, 1.0 - proba) - np.asarray(interval.sampling, dtype=np.float64)[stuck]
        with np.errstate(divide="ignore", invalid="ignore"):
            per_class = np.where((b > 0) & (target > 0), target / np.where(b > 0, b, 1.0), 0.0)
        self._factors.append(per_class.max(axis=1) if per_class.size else np.empty(0))

    @property
    def factors(self) -> np.ndarray:
        """Per trivial, non-vacuous row: the factor on L (or 1/γ) that would make its bound non-trivial."""
        return np.concatenate(self._factors) if self._factors else np.empty(0)

    def message(self, model: Any) -> str | None:
        """The warning text, or None when the bounds are useful enough."""
        if self.rows == 0:
            return None
        share = self.trivial / self.rows
        if share < TRIVIAL_SHARE_WARN and self.certified > 0:
            return None
        lines = [
            f"warning: the bounds cannot help here: {share:.0%} of the {self.rows} rows have a trivial bound "
            f"(every class's interval is [0, 1]) and {self.certified / self.rows:.1%} are certified."
        ]
        if self.vacuous:
            lines.append(
                f"  {self.vacuous / self.rows:.0%} have no training point within the kernel's reach (κ = 0): "
                "use a larger bandwidth or --neighbors K."
            )
        if self.bias_rows:
            bias_share = self.bias_sum / self.bias_rows
            lines.append(
                f"  Of ε, on average {bias_share:.0%} is the bias term (L·D/κ, grows with L and the bandwidth) "
                f"and {1 - bias_share:.0%} the sampling term (shrinks with more data near each query)."
            )
        f = self.factors
        if f.size:
            no_l = float((f <= 0).mean())
            if no_l > 0:
                lines.append(
                    f"  For {no_l:.0%} of the trivial rows the sampling term alone is too wide: no L helps; "
                    "more data, a larger bandwidth or K would."
                )
            helpable = f[f > 0]
            if helpable.size:
                median = float(np.median(helpable))
                lines.append("  " + _needed_assumption(model, median))
        lines.append(
            "  How results move with L: nwbound.assumptions.sensitivity_report; a data-driven L: "
            "nwbound fit ... --lipschitz auto."
        )
        return "\n".join(lines)

    def report(self, model: Any) -> None:
        """Print :meth:`message` to stderr when there is one."""
        text = self.message(model)
        if text:
            print(text, file=sys.stderr)


def _needed_assumption(model: Any, factor: float) -> str:
    """'L would have to be ≤ …' in the units the user gave, for a median trivial row."""
    est = getattr(model, "estimator", model)
    raw_l, raw_g = getattr(model, "lipschitz", None), getattr(model, "margin", None)
    if getattr(est, "lipschitz", None) is not None:
        given, units = (raw_l, "raw feature units") if raw_l is not None else (est.lipschitz, "the units the classifier sees")
        return (f"With L ≤ {given * factor:.4g} ({factor:.0%} of the current {given:.4g}; {units}) half of the trivial "
                "bounds that a smaller L can fix would become non-trivial.")
    if getattr(est, "margin", None) is not None:
        given, units = (raw_g, "raw feature units") if raw_g is not None else (est.margin, "the units the classifier sees")
        return (f"With γ ≥ {given / factor:.4g} ({1 / factor:.2f}× the current {given:.4g}; {units}) half of the "
                "trivial bounds that a larger γ can fix would become non-trivial.")
    return f"A {factor:.3g}× smaller bias constant would make half of them non-trivial."
