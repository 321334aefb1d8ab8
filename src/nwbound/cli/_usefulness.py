"""Say plainly, once per command, when the bounds cannot help (most trivial, or nothing certified).

The library warns on every ``predict_interval`` call
(:func:`nwbound.diagnostics.warn_if_useless`); the CLI predicts in chunks, so
it silences those per-chunk warnings and prints one report for the whole run
instead: exact counts of trivial / certified / vacuous rows, and
:func:`nwbound.diagnostics.bound_usefulness` (cause and fix) on a
deterministic, evenly spread sample of at most :data:`SAMPLE_ROWS` rows, so
memory stays bounded on any table.
"""

from __future__ import annotations

import dataclasses
import sys
import warnings
from typing import Any

import numpy as np

__all__ = ["UsefulnessTally", "quiet_predict_interval", "warn_class_certificates", "SAMPLE_ROWS"]

#: Rows kept for the cause-and-fix report (medians need the rows, not counts).
SAMPLE_ROWS = 50_000


def quiet_predict_interval(model: Any, X: Any) -> Any:
    """``model.predict_interval(X)`` without the per-call UselessBoundWarning (the CLI reports once)."""
    from ..diagnostics import UselessBoundWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UselessBoundWarning)
        return model.predict_interval(X)


def warn_class_certificates(table: Any, classes: np.ndarray, delta: float) -> int:
    """One warning line per class of ``table`` (:class:`nwbound.metrics.ClassCertificateTable`) with too many of
    its rows certified as another class for the assumption (tail at most δ / number of classes); the count.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.metrics import ClassCertificateTable
    >>> from nwbound.cli._usefulness import warn_class_certificates
    >>> t = ClassCertificateTable(np.arange(2), np.array([90, 10]), np.array([0, 7]), np.array([10, 90]),
    ...                           np.array([1.0, 0.9]), np.array([1.0, 1e-6]))
    >>> import contextlib, io
    >>> with contextlib.redirect_stderr(io.StringIO()) as err:
    ...     warn_class_certificates(t, np.array(["a", "b"]), 0.05)
    1
    >>> err.getvalue().startswith("warning: class 'b': 7 of its 10 rows")
    True
    """
    flagged = table.flagged(delta)
    for k in flagged:
        print(f"warning: class {str(classes[k])!r}: {table.certified_other[k]} of its {table.support[k]} rows are certified "
              f"as another class, where the bound allows about {table.allowance[k]:.2f} (chance {table.p_value[k]:.2g} "
              f"under the assumption, below δ/{len(classes)} = {delta / len(classes):.2g}). The assumption (L) fails "
              "near this class, or its rows are not independent draws: do not trust certificates near its rows; a "
              "larger L, or more rows of this class.", file=sys.stderr)
    return len(flagged)


class UsefulnessTally:
    """Counts over the chunks of one run, plus an evenly spread sample for the cause-and-fix report.

    The sample keeps the rows whose running number is a multiple of a stride
    that doubles whenever more than ``max_rows`` are held (so it is spread
    over the whole table whatever its length).

    Parameters
    ----------
    max_rows : int, default=SAMPLE_ROWS

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import PredictionInterval
    >>> iv = PredictionInterval.from_parts(
    ...     proba=np.array([[0.6, 0.4]] * 4), bias=np.full((4, 2), 0.9), sampling=np.full((4, 2), 0.3),
    ...     kappa=np.ones(4), n_eff=np.ones(4), vacuous=np.zeros(4, bool), bandwidth=np.ones(4))
    >>> tally = UsefulnessTally(max_rows=2); tally.add(iv); tally.add(iv)
    >>> tally.rows, tally.trivial, tally.certified, len(tally.sample())
    (8, 8, 0, 2)
    """

    def __init__(self, max_rows: int = SAMPLE_ROWS) -> None:
        self.max_rows = int(max_rows)
        self.rows = self.trivial = self.certified = self.vacuous = 0
        self._stride = 1
        self._parts: list[Any] = []
        self._numbers: list[np.ndarray] = []

    def add(self, interval: Any) -> None:
        """Tally one chunk's :class:`~nwbound.PredictionInterval`."""
        n = len(interval)
        self.trivial += int(np.count_nonzero(interval.trivial))
        self.certified += int(np.count_nonzero(interval.certified))
        self.vacuous += int(np.count_nonzero(interval.vacuous))
        numbers = np.arange(self.rows, self.rows + n)
        self.rows += n
        keep = numbers % self._stride == 0
        if keep.any():
            self._parts.append(interval.take(np.flatnonzero(keep)))
            self._numbers.append(numbers[keep])
        while sum(len(k) for k in self._numbers) > self.max_rows:
            self._stride *= 2
            thinned = [(p, k) for p, k in zip(self._parts, self._numbers)]
            self._parts, self._numbers = [], []
            for part, nums in thinned:
                sel = np.flatnonzero(nums % self._stride == 0)
                if sel.size:
                    self._parts.append(part.take(sel))
                    self._numbers.append(nums[sel])

    def sample(self) -> Any:
        """The sampled rows as one PredictionInterval (None before any row)."""
        from .._result import PredictionInterval

        return PredictionInterval.concatenate(self._parts) if self._parts else None

    def message(self, model: Any, what: str | None = None, context: Any = None) -> str | None:
        """The warning text, or None when the bounds are useful (see bound_usefulness).

        ``context``: the :class:`~nwbound.diagnostics.AdviceContext` the advice must fit (None: the
        model's own settings, for a command-line user).
        """
        from ..diagnostics import AdviceContext, bound_usefulness

        sample = self.sample()
        if sample is None:
            return None
        beta, unit_note = _beta(model)
        if context is None:  # a model from a file (predict, evaluate)
            context = AdviceContext.from_estimator(getattr(model, "estimator", model), interface="cli")
            if not context.lipschitz_auto:  # a file stores L as a number: chosen by --lipschitz auto, or given
                context = dataclasses.replace(context, lipschitz_auto=None)
        report = bound_usefulness(sample, beta=beta, context=context)
        if not report.useless:
            return None
        where = what or f"{self.rows} rows"  # e.g. "previewed on 2000 training rows"
        lines = [
            f"warning: the bounds cannot help here ({where}): {self.trivial / self.rows:.1%} of the rows have a "
            f"trivial bound (every class's interval is [0, 1]), {self.certified / self.rows:.1%} are certified, "
            f"{self.vacuous / self.rows:.1%} are vacuous (no training point in reach, κ = 0).",
            f"  Median ε of the predicted class {report.median_epsilon:.3g}; in the Hoeffding account of the width, "
            f"the bias term (L·D/κ) is {_pct(report.median_bias_share)} "
            f"and the sampling term {_pct(1 - report.median_bias_share)} (medians"
            + ("" if len(sample) == self.rows else f" over {len(sample)} evenly spread rows") + ").",
            "  " + report.explanation,
        ]
        factor = report.beta_factor_for_half_bias
        if unit_note is not None and report.cause == "bias" and factor == factor and factor > 0:  # not NaN
            lines.append("  " + unit_note(factor))
        return "\n".join(lines)

    def report(self, model: Any, what: str | None = None, context: Any = None) -> None:
        """Print :meth:`message` to stderr when there is one."""
        text = self.message(model, what, context)
        if text:
            print(text, file=sys.stderr)


def _pct(x: float) -> str:
    return "n/a" if x != x else f"{x:.0%}"


def _beta(model: Any) -> tuple[float | None, Any]:
    """β the bounds used (L or 1/γ, classifier units) and a note for a factor on β in the user's units."""
    est = getattr(model, "estimator", model)
    raw_l, raw_g = getattr(model, "lipschitz", None), getattr(model, "margin", None)
    if isinstance(getattr(est, "lipschitz", None), str) and getattr(est, "margin", None) is None:
        # lipschitz="auto": the L fit chose; a cross-fitted model has one per model, each in its own space.
        chosen = getattr(est, "lipschitz_", None)
        return (None if chosen is None or getattr(est, "_cross_fitted", False) else float(chosen)), None
    if getattr(est, "lipschitz", None) is not None and not isinstance(est.lipschitz, str):
        if raw_l is None or raw_l == est.lipschitz:
            return float(est.lipschitz), None
        return float(est.lipschitz), lambda f: (
            f"In the raw feature units you gave: L = {raw_l * f:.3g} (now {raw_l:.4g}, ×{f:.2g})."
        )
    if getattr(est, "margin", None) is not None:
        given = raw_g if raw_g is not None else est.margin
        return 1.0 / float(est.margin), lambda f: (
            f"With a margin β = 1/γ: the same factor means γ = {given / f:.3g} (now {given:.4g}"
            + (", raw feature units" if raw_g is not None else "") + ")."
        )
    return None, None
