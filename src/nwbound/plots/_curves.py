"""Curves of flagged predictions: cumulative recall and risk-coverage."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .. import metrics as _m
from ._base import _check_ax
from ._labels import _argmax_labels


def _is_many(x: Any) -> bool:
    """True for a list/tuple of 1-D arrays (several curves)."""
    return isinstance(x, (list, tuple)) and len(x) > 0 and np.ndim(x[0]) == 1


def _curve_inputs(
    y_pred: Any, uncertainty: Any, label: str | Sequence[str] | None
) -> tuple[list[Any], list[Any], list[str | None]]:
    """One prediction, uncertainty and label per curve (a single prediction serves every curve)."""
    us = list(uncertainty) if _is_many(uncertainty) else [uncertainty]
    ps = list(y_pred) if _is_many(y_pred) else [y_pred] * len(us)
    if len(ps) != len(us):
        raise ValueError(
            f"`y_pred` has {len(ps)} entries but `uncertainty` has {len(us)}; give one "
            "prediction per curve or a single one."
        )
    if label is None:
        labels: list[str | None] = [None] * len(us)
    elif isinstance(label, str):
        if len(us) != 1:
            raise ValueError(f"`label` must be a list of {len(us)} labels, one per curve.")
        labels = [label]
    else:
        labels = list(label)
        if len(labels) != len(us):
            raise ValueError(f"`label` has {len(labels)} entries for {len(us)} curves.")
    return ps, us, labels


class _CurvesDisplay:
    """What the displays of several (x, y) curves share: the curves and their legend labels."""

    def __init__(
        self,
        *,
        curves: Sequence[tuple[np.ndarray, np.ndarray]],
        labels: Sequence[str | None] | None = None,
    ) -> None:
        if len(curves) == 0:
            raise ValueError("`curves` must hold at least one curve.")
        self.curves = [(np.asarray(x), np.asarray(y)) for x, y in curves]
        labels = [None] * len(self.curves) if labels is None else list(labels)
        if len(labels) != len(self.curves):
            raise ValueError(f"`labels` has {len(labels)} entries for {len(self.curves)} curves.")
        self.labels = labels


class CumulativeRecallDisplay(_CurvesDisplay):
    """Share of errors caught vs. share of samples flagged (paper, fig. 3e).

    Parameters
    ----------
    curves : sequence of (fraction_flagged, fraction_of_errors_caught)
        One pair of arrays per curve, e.g. from
        :func:`nwbound.metrics.cumulative_recall_curve`.
    labels : sequence of str or None, optional
        Legend label per curve.

    Attributes
    ----------
    lines_ : list of matplotlib.lines.Line2D
        One line per curve.
    random_line_ : matplotlib.lines.Line2D or None
        The diagonal (uninformative ranking).
    ax_, figure_ : matplotlib Axes and Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")  # draw off-screen
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> from nwbound.metrics import cumulative_recall_curve
    >>> from nwbound.plots import CumulativeRecallDisplay
    >>> y_true, y_pred = [0, 1, 1, 0, 1], [0, 0, 1, 1, 1]
    >>> curve = cumulative_recall_curve(y_true, y_pred, [0.1, 0.9, 0.2, 0.8, 0.3])
    >>> disp = CumulativeRecallDisplay(curves=[curve], labels=["bound width"]).plot()
    >>> len(disp.lines_), disp.lines_[0].get_ydata().tolist()
    (1, [0.0, 0.5, 1.0, 1.0, 1.0, 1.0])
    >>> plt.close(disp.figure_)
    """

    @classmethod
    def from_arrays(
        cls,
        y_true: ArrayLike,
        y_pred: ArrayLike | Sequence[ArrayLike],
        uncertainty: ArrayLike | Sequence[ArrayLike],
        *,
        label: str | Sequence[str] | None = None,
        ax: Any = None,
    ) -> "CumulativeRecallDisplay":
        """Compute one or several curves and plot them.

        Parameters
        ----------
        y_true : array-like of shape (n_samples,)
        y_pred : array-like of shape (n_samples,) or list of them
            One prediction for all curves, or one per curve.
        uncertainty : array-like of shape (n_samples,) or list of them
            One uncertainty per curve.
        label : str or list of str, optional
        ax : matplotlib Axes, optional

        Raises
        ------
        ValueError
            If the numbers of predictions, uncertainties and labels do not match.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")  # draw off-screen
        >>> import matplotlib.pyplot as plt
        >>> import numpy as np
        >>> from nwbound.plots import CumulativeRecallDisplay
        >>> y_true, y_pred = [0, 1, 1, 0, 1], [0, 0, 1, 1, 1]
        >>> disp = CumulativeRecallDisplay.from_arrays(
        ...     y_true, y_pred, [[0.1, 0.9, 0.2, 0.8, 0.3], [0.5, 0.1, 0.4, 0.2, 0.3]],
        ...     label=["good ranking", "poor ranking"])
        >>> [line.get_label() for line in disp.lines_]
        ['good ranking', 'poor ranking']
        >>> plt.close(disp.figure_)
        """
        ps, us, labels = _curve_inputs(y_pred, uncertainty, label)
        curves = [_m.cumulative_recall_curve(y_true, p, u) for p, u in zip(ps, us)]
        return cls(curves=curves, labels=labels).plot(ax=ax)

    @classmethod
    def from_interval(
        cls,
        y_true: ArrayLike,
        interval: Any,
        *,
        classes: ArrayLike | None = None,
        kind: str = "width",
        label: str | Sequence[str] | None = None,
        ax: Any = None,
    ) -> "CumulativeRecallDisplay":
        """Curves for one interval, a list of intervals, or ``{label: interval}``.

        The prediction is argmax ``p̂`` (mapped through ``classes``) and the
        uncertainty :func:`nwbound.metrics.uncertainty_from_interval` of ``kind``.

        Raises
        ------
        ValueError
            If both ``label`` and a dict of intervals are given.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")  # draw off-screen
        >>> import matplotlib.pyplot as plt
        >>> import numpy as np
        >>> from nwbound import PredictionInterval
        >>> iv = PredictionInterval.from_parts(
        ...     proba=np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]]), bias=np.zeros((3, 2)),
        ...     sampling=np.full((3, 2), 0.2), kappa=np.ones(3), n_eff=np.ones(3),
        ...     vacuous=np.zeros(3, dtype=bool), bandwidth=np.ones(3))
        >>> from nwbound.plots import CumulativeRecallDisplay
        >>> disp = CumulativeRecallDisplay.from_interval(
        ...     [0, 1, 1], {"width": iv, "same again": iv}, kind="max_proba")
        >>> [line.get_label() for line in disp.lines_]
        ['width', 'same again']
        >>> plt.close(disp.figure_)
        """
        if isinstance(interval, Mapping):
            if label is not None:
                raise ValueError("Give `label` or a dict of intervals, not both.")
            label = [str(k) for k in interval]
            ivs = list(interval.values())
        elif isinstance(interval, (list, tuple)):
            ivs = list(interval)
        else:
            ivs = [interval]
        preds = [_argmax_labels(iv, classes) for iv in ivs]
        us = [_m.uncertainty_from_interval(iv, kind) for iv in ivs]
        if len(ivs) == 1:
            return cls.from_arrays(y_true, preds[0], us[0], label=label, ax=ax)
        return cls.from_arrays(y_true, preds, us, label=label, ax=ax)

    def plot(
        self, ax: Any = None, *, show_random: bool = True, mark_fraction: float | None = None
    ) -> "CumulativeRecallDisplay":
        """Draw the curves.

        Parameters
        ----------
        ax : matplotlib Axes, optional
        show_random : bool, default=True
            Draw the diagonal that a random ranking follows in expectation.
        mark_fraction : float, optional
            Draw a vertical guide at this share of flagged samples (e.g. 0.1).

        Returns
        -------
        self

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")  # draw off-screen
        >>> import matplotlib.pyplot as plt
        >>> import numpy as np
        >>> from nwbound.metrics import cumulative_recall_curve
        >>> from nwbound.plots import CumulativeRecallDisplay
        >>> curve = cumulative_recall_curve([0, 1, 1, 0], [0, 0, 1, 1], [0.1, 0.9, 0.2, 0.8])
        >>> disp = CumulativeRecallDisplay(curves=[curve]).plot(show_random=False, mark_fraction=0.5)
        >>> disp.random_line_ is None
        True
        >>> plt.close(disp.figure_)
        """
        fig, ax = _check_ax(ax)
        self.lines_ = []
        for (frac, rec), lab in zip(self.curves, self.labels):
            (line,) = ax.plot(frac, rec, label=lab)
            self.lines_.append(line)
        self.random_line_ = None
        if show_random:
            (self.random_line_,) = ax.plot([0, 1], [0, 1], "k:", linewidth=1, label="random")
        if mark_fraction is not None:
            ax.axvline(mark_fraction, color="grey", linewidth=0.8)
        ax.set(
            xlim=(0, 1),
            ylim=(0, 1.02),
            xlabel="fraction of samples flagged (most uncertain first)",
            ylabel="fraction of errors caught",
        )
        if any(lab is not None for lab in self.labels) or show_random:
            ax.legend(loc="lower right")
        self.ax_, self.figure_ = ax, fig
        return self


# --------------------------------------------------------------------------
class RiskCoverageDisplay(_CurvesDisplay):
    """Selective risk vs coverage: the error rate among the predictions kept.

    Each curve keeps the least uncertain predictions first
    (:func:`nwbound.metrics.risk_coverage_curve`); single operating points
    (e.g. the certified predictions, or split-conformal singleton sets) are
    added with :meth:`add_point`.

    Parameters
    ----------
    curves : sequence of (coverage, risk)
        One pair of arrays per curve.
    labels : sequence of str or None, optional
        Legend label per curve.

    Attributes
    ----------
    lines_ : list of matplotlib.lines.Line2D
        One line per curve.
    points_ : list of matplotlib.lines.Line2D
        The markers added by :meth:`add_point`.
    ax_, figure_ : matplotlib Axes and Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")  # draw off-screen
    >>> import matplotlib.pyplot as plt
    >>> from nwbound.plots import RiskCoverageDisplay
    >>> y_true, y_pred = [0, 1, 1, 0, 1], [0, 0, 1, 1, 1]
    >>> disp = RiskCoverageDisplay.from_arrays(y_true, y_pred, [0.1, 0.9, 0.2, 0.8, 0.3], label="ε")
    >>> disp.lines_[0].get_ydata().round(2).tolist()
    [0.0, 0.0, 0.0, 0.25, 0.4]
    >>> _ = disp.add_point(0.6, 0.0, label="certified")
    >>> len(disp.points_)
    1
    >>> plt.close(disp.figure_)
    """

    @classmethod
    def from_arrays(
        cls,
        y_true: ArrayLike | Sequence[ArrayLike],
        y_pred: ArrayLike | Sequence[ArrayLike],
        uncertainty: ArrayLike | Sequence[ArrayLike],
        *,
        label: str | Sequence[str] | None = None,
        ax: Any = None,
    ) -> "RiskCoverageDisplay":
        """Compute one or several curves and plot them.

        Parameters
        ----------
        y_true : array-like of shape (n_samples,) or list of them
            One truth for all curves, or one per curve (curves of different
            models may cover different rows).
        y_pred : array-like of shape (n_samples,) or list of them
            One prediction for all curves, or one per curve.
        uncertainty : array-like of shape (n_samples,) or list of them
            One uncertainty per curve (larger = kept later).
        label : str or list of str, optional
        ax : matplotlib Axes, optional

        Returns
        -------
        RiskCoverageDisplay

        Raises
        ------
        ValueError
            If the numbers of truths, predictions, uncertainties and labels do not match.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")  # draw off-screen
        >>> import matplotlib.pyplot as plt
        >>> from nwbound.plots import RiskCoverageDisplay
        >>> disp = RiskCoverageDisplay.from_arrays(
        ...     [0, 1, 1], [[0, 1, 0], [0, 0, 1]], [[0.1, 0.2, 0.9], [0.1, 0.9, 0.2]], label=["a", "b"])
        >>> [line.get_ydata().round(2).tolist() for line in disp.lines_]
        [[0.0, 0.0, 0.33], [0.0, 0.0, 0.33]]
        >>> plt.close(disp.figure_)
        """
        ps, us, labels = _curve_inputs(y_pred, uncertainty, label)
        ts = list(y_true) if _is_many(y_true) else [y_true] * len(us)
        if len(ts) != len(us):
            raise ValueError(
                f"`y_true` has {len(ts)} entries but `uncertainty` has {len(us)}; give one "
                "truth per curve or a single one."
            )
        curves = [_m.risk_coverage_curve(t, p, u) for t, p, u in zip(ts, ps, us)]
        return cls(curves=curves, labels=labels).plot(ax=ax)

    def plot(self, ax: Any = None) -> "RiskCoverageDisplay":
        """Draw the curves.

        Parameters
        ----------
        ax : matplotlib Axes, optional

        Returns
        -------
        self

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")  # draw off-screen
        >>> import matplotlib.pyplot as plt
        >>> import numpy as np
        >>> from nwbound.plots import RiskCoverageDisplay
        >>> disp = RiskCoverageDisplay(curves=[(np.array([0.5, 1.0]), np.array([0.0, 0.5]))]).plot()
        >>> disp.ax_.get_xlabel()
        'coverage (share of predictions kept)'
        >>> plt.close(disp.figure_)
        """
        fig, ax = _check_ax(ax)
        self.lines_ = []
        self.points_ = []
        for (coverage, risk), lab in zip(self.curves, self.labels):
            (line,) = ax.plot(coverage, risk, label=lab)
            self.lines_.append(line)
        ax.set(xlim=(0, 1.0), xlabel="coverage (share of predictions kept)",
               ylabel="selective risk (error among kept)")
        ax.set_ylim(bottom=0.0)
        if any(lab is not None for lab in self.labels):
            ax.legend(loc="upper left")
        self.ax_, self.figure_ = ax, fig
        return self

    def add_point(self, coverage: float, risk: float, *, label: str | None = None, marker: str = "o") -> Any:
        """Mark one operating point (e.g. the certified predictions) on the drawn axes.

        Parameters
        ----------
        coverage, risk : float
            Share kept and error among the kept, in [0, 1].
        label : str, optional
        marker : str, default="o"

        Returns
        -------
        matplotlib.lines.Line2D

        Raises
        ------
        ValueError
            Outside [0, 1], or before :meth:`plot`.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")  # draw off-screen
        >>> import matplotlib.pyplot as plt
        >>> import numpy as np
        >>> from nwbound.plots import RiskCoverageDisplay
        >>> disp = RiskCoverageDisplay(curves=[(np.array([0.5, 1.0]), np.array([0.0, 0.5]))]).plot()
        >>> disp.add_point(0.9, 0.01, label="singleton sets").get_xdata().tolist()
        [0.9]
        >>> plt.close(disp.figure_)
        """
        if not hasattr(self, "ax_"):
            raise ValueError("Call plot() (or from_arrays) before add_point().")
        values = np.array([coverage, risk], dtype=np.float64)
        if not np.all(np.isfinite(values)) or np.any(values < 0) or np.any(values > 1):
            raise ValueError(f"`coverage` and `risk` must lie in [0, 1], got {coverage!r} and {risk!r}.")
        (point,) = self.ax_.plot([values[0]], [values[1]], linestyle="none", marker=marker, label=label)
        self.points_.append(point)
        if label is not None:
            self.ax_.legend(loc="upper left")
        return point
