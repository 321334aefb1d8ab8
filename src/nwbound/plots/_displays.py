"""Display objects for the paper's figures, in the style of sklearn's Displays.

Each class is built from computed arrays (``from_arrays`` / ``from_interval``
compute them with :mod:`nwbound.metrics` and draw at once); ``plot(ax=None)``
draws again on any Axes and returns ``self`` with ``figure_`` and ``ax_`` set
and the created artists stored in attributes ending in ``_``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .. import metrics as _m
from ..metrics._validation import (
    _as_1d,
    _check_classes,
    _check_interval,
    _check_proba,
    _check_same_length,
    _encode,
)
from ._base import _check_ax, pyplot

__all__ = [
    "BoundWidthDisplay",
    "CumulativeRecallDisplay",
    "IntervalDisplay",
    "ReliabilityDisplay",
    "RiskCoverageDisplay",
    "TypeErrorDisplay",
]


def _labels_for(classes: ArrayLike | None, n_classes: int) -> np.ndarray:
    """Column labels: ``classes`` or 0 … C−1."""
    if classes is None:
        return np.arange(n_classes)
    cls = _check_classes(classes)
    if cls.shape[0] != n_classes:
        raise ValueError(f"`classes` has {cls.shape[0]} labels but there are {n_classes} columns.")
    return cls


def _argmax_labels(interval: Any, classes: ArrayLike | None) -> np.ndarray:
    iv = _check_interval(interval)
    return _labels_for(classes, iv.n_classes)[np.argmax(iv.proba, axis=1)]


# --------------------------------------------------------------------------
class ReliabilityDisplay:
    """Accuracy per confidence bin against the diagonal, with the ECE.

    Parameters
    ----------
    table : ReliabilityTable
        From :func:`nwbound.metrics.expected_calibration_error`.
    ece : float
        The expected calibration error.
    label : str, optional
        Legend label of the bars.

    Attributes
    ----------
    bars_ : matplotlib.container.BarContainer
        One bar per non-empty bin, height = accuracy in the bin.
    diagonal_ : matplotlib.lines.Line2D
        Perfect calibration.
    text_ : matplotlib.text.Text
        The ECE annotation.
    ax_, figure_ : matplotlib Axes and Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")  # draw off-screen
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> proba = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]])
    >>> from nwbound.metrics import expected_calibration_error
    >>> from nwbound.plots import ReliabilityDisplay
    >>> ece, table = expected_calibration_error([0, 1, 1], proba, n_bins=2)
    >>> disp = ReliabilityDisplay(table=table, ece=ece, label="NWC").plot()
    >>> len(disp.bars_), disp.text_.get_text()  # one bar per non-empty bin
    (1, 'ECE = 10.0 %')
    >>> plt.close(disp.figure_)
    """

    def __init__(self, *, table: Any, ece: float, label: str | None = None) -> None:
        self.table = table
        self.ece = float(ece)
        self.label = label

    @classmethod
    def from_arrays(
        cls,
        y_true: ArrayLike,
        proba: Any,
        *,
        classes: ArrayLike | None = None,
        n_bins: int = 10,
        label: str | None = None,
        ax: Any = None,
    ) -> "ReliabilityDisplay":
        """Compute the reliability table from labels and probabilities, then plot.

        ``proba`` may be an ``(n, C)`` array or a PredictionInterval; see
        :func:`nwbound.metrics.expected_calibration_error`.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")  # draw off-screen
        >>> import matplotlib.pyplot as plt
        >>> import numpy as np
        >>> proba = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]])
        >>> from nwbound.plots import ReliabilityDisplay
        >>> disp = ReliabilityDisplay.from_arrays(["a", "b", "b"], proba, classes=["a", "b"], n_bins=2)
        >>> round(disp.ece, 3)
        0.1
        >>> plt.close(disp.figure_)
        """
        ece, table = _m.expected_calibration_error(y_true, proba, classes, n_bins)
        return cls(table=table, ece=ece, label=label).plot(ax=ax)

    @classmethod
    def from_interval(
        cls,
        y_true: ArrayLike,
        interval: Any,
        *,
        classes: ArrayLike | None = None,
        n_bins: int = 10,
        label: str | None = None,
        ax: Any = None,
    ) -> "ReliabilityDisplay":
        """As :meth:`from_arrays`, with ``interval.proba``.

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
        >>> from nwbound.plots import ReliabilityDisplay
        >>> disp = ReliabilityDisplay.from_interval([0, 1, 1], iv, n_bins=2)
        >>> disp.table.count.tolist()
        [0, 3]
        >>> plt.close(disp.figure_)
        """
        iv = _check_interval(interval)
        return cls.from_arrays(y_true, iv.proba, classes=classes, n_bins=n_bins, label=label, ax=ax)

    def plot(self, ax: Any = None, *, color: str | None = None) -> "ReliabilityDisplay":
        """Draw the bars, the diagonal and the ECE.

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Axes to draw on; a new figure is made when None.
        color : str, optional
            Bar colour.

        Returns
        -------
        self

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")  # draw off-screen
        >>> import matplotlib.pyplot as plt
        >>> import numpy as np
        >>> proba = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]])
        >>> from nwbound.metrics import expected_calibration_error
        >>> from nwbound.plots import ReliabilityDisplay
        >>> ece, table = expected_calibration_error([0, 1, 1], proba, n_bins=2)
        >>> fig, ax = plt.subplots()
        >>> disp = ReliabilityDisplay(table=table, ece=ece).plot(ax=ax, color="tab:orange")
        >>> disp.ax_ is ax
        True
        >>> plt.close(disp.figure_)
        """
        fig, ax = _check_ax(ax)
        t = self.table
        keep = t.count > 0
        centers = 0.5 * (t.bin_lower + t.bin_upper)
        widths = t.bin_upper - t.bin_lower
        self.bars_ = ax.bar(
            centers[keep],
            t.accuracy[keep],
            width=widths[keep],
            edgecolor="black",
            color=color,
            alpha=0.8,
            label=self.label or "accuracy",
        )
        (self.diagonal_,) = ax.plot([0, 1], [0, 1], "k--", linewidth=1, label="perfect calibration")
        self.text_ = ax.text(
            0.04, 0.95, f"ECE = {100 * self.ece:.1f} %", transform=ax.transAxes, va="top"
        )
        ax.set(
            xlim=(0, 1),
            ylim=(0, 1),
            xlabel=r"confidence $\max_c \hat p_c$",
            ylabel="accuracy",
        )
        ax.legend(loc="lower right")
        self.ax_, self.figure_ = ax, fig
        return self


# --------------------------------------------------------------------------
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


# --------------------------------------------------------------------------
class IntervalDisplay:
    """Predicted probabilities with their bounds for a few queries.

    One panel per query shows ``p̂_c`` for every class with an error bar from
    ``lower_c`` to ``upper_c``; ``T`` marks the true class and ``P`` the
    predicted one (the paper's MNIST figure).

    Parameters
    ----------
    proba, lower, upper : ndarray of shape (n_queries, n_classes)
    classes : ndarray of shape (n_classes,)
        Column labels.
    true_index : ndarray of int, shape (n_queries,), optional
        Column of the true class per query.
    indices : ndarray of int, shape (n_queries,), optional
        Position of each query in the original data (panel titles).

    Attributes
    ----------
    errorbars_ : list of matplotlib ErrorbarContainer
        One per query.
    marks_ : list of list of matplotlib.text.Text
        The ``T``/``P`` marks per query.
    axes_ : ndarray of Axes
        The panels (``ax_`` is the first).
    ax_, figure_ : matplotlib Axes and Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")  # draw off-screen
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> from nwbound.plots import IntervalDisplay
    >>> proba = np.array([[0.9, 0.1], [0.6, 0.4]])
    >>> disp = IntervalDisplay(proba=proba, lower=proba - 0.2, upper=proba + 0.1,
    ...                        classes=np.array(["cat", "dog"]), true_index=np.array([0, 1])).plot()
    >>> len(disp.errorbars_), len(disp.axes_)
    (2, 2)
    >>> plt.close(disp.figure_)
    """

    def __init__(
        self,
        *,
        proba: np.ndarray,
        lower: np.ndarray,
        upper: np.ndarray,
        classes: np.ndarray,
        true_index: np.ndarray | None = None,
        indices: np.ndarray | None = None,
    ) -> None:
        self.proba = np.asarray(proba, dtype=float)
        self.lower = np.asarray(lower, dtype=float)
        self.upper = np.asarray(upper, dtype=float)
        self.classes = np.asarray(classes)
        self.true_index = None if true_index is None else np.asarray(true_index)
        self.indices = np.arange(len(self.proba)) if indices is None else np.asarray(indices)

    @classmethod
    def from_interval(
        cls,
        interval: Any,
        y_true: ArrayLike | None = None,
        *,
        classes: ArrayLike | None = None,
        indices: ArrayLike | None = None,
        max_queries: int = 6,
        ax: Any = None,
    ) -> "IntervalDisplay":
        """Select queries from an interval and plot them.

        Parameters
        ----------
        interval : PredictionInterval
        y_true : array-like of shape (n_samples,), optional
            True labels of *all* queries (to draw ``T``).
        classes : array-like of shape (n_classes,), optional
        indices : array-like of int, optional
            Which queries to show; default the first ``max_queries``.
        max_queries : int, default=6
        ax : Axes or array of Axes, optional
            One Axes per shown query.

        Raises
        ------
        ValueError
            If ``indices`` is empty, not integer or out of range, or ``y_true`` has
            another length than the interval.

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
        >>> from nwbound.plots import IntervalDisplay
        >>> disp = IntervalDisplay.from_interval(iv, ["a", "b", "b"], classes=["a", "b"], indices=[1, 2])
        >>> disp.indices.tolist(), disp.true_index.tolist()
        ([1, 2], [1, 1])
        >>> plt.close(disp.figure_)
        """
        iv = _check_interval(interval)
        n = iv.proba.shape[0]
        labels = _labels_for(classes, iv.n_classes)
        if indices is None:
            idx = np.arange(min(n, max_queries))
        else:
            idx = np.atleast_1d(np.asarray(indices))
            if idx.size == 0 or not np.issubdtype(idx.dtype, np.integer):
                raise ValueError(f"`indices` must be a non-empty list of ints, got {indices!r}.")
            if idx.min() < -n or idx.max() >= n:
                raise ValueError(f"`indices` must lie in [0, {n}), got {idx.tolist()}.")
            idx = idx % n
        true_index = None
        if y_true is not None:
            t = _as_1d(y_true, "y_true")
            _check_same_length(("y_true", t), ("interval", iv.proba))
            true_index = _encode(t[idx], None if classes is None else labels, "y_true", iv.n_classes)
        return cls(
            proba=iv.proba[idx],
            lower=iv.lower[idx],
            upper=iv.upper[idx],
            classes=labels,
            true_index=true_index,
            indices=idx,
        ).plot(ax=ax)

    def plot(self, ax: Any = None, *, ncols: int | None = None) -> "IntervalDisplay":
        """Draw one panel per query.

        Parameters
        ----------
        ax : Axes or array-like of Axes, optional
            At least one Axes per query; new panels are made when None.
        ncols : int, optional
            Panels per row for new figures (default: up to 5).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            If ``ax`` holds fewer Axes than there are queries.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")  # draw off-screen
        >>> import matplotlib.pyplot as plt
        >>> import numpy as np
        >>> from nwbound.plots import IntervalDisplay
        >>> proba = np.array([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7]])
        >>> disp = IntervalDisplay(proba=proba, lower=proba - 0.1, upper=proba + 0.1,
        ...                        classes=np.array([0, 1])).plot(ncols=2)
        >>> len(disp.errorbars_)
        3
        >>> plt.close(disp.figure_)
        """
        plt = pyplot()
        q, c = self.proba.shape
        if ax is None:
            ncols = min(q, 5) if ncols is None else ncols
            nrows = int(np.ceil(q / ncols))
            fig, axes = plt.subplots(
                nrows,
                ncols,
                sharey=True,
                squeeze=False,
                figsize=(2.2 * ncols, 2.2 * nrows),
                layout="constrained",
            )
            axes = axes.ravel()
            for extra in axes[q:]:
                extra.set_visible(False)
        else:
            axes = np.atleast_1d(np.asarray(ax, dtype=object)).ravel()
            if axes.size < q:
                raise ValueError(f"`ax` holds {axes.size} Axes but {q} queries are shown.")
            fig = axes[0].figure
        x = np.arange(c)
        pred = np.argmax(self.proba, axis=1)
        self.errorbars_, self.marks_ = [], []
        for i in range(q):
            a = axes[i]
            p = self.proba[i]
            yerr = np.vstack([p - self.lower[i], self.upper[i] - p]).clip(min=0)
            self.errorbars_.append(a.errorbar(x, p, yerr=yerr, fmt="o", capsize=3, markersize=4))
            marks = []
            tags = {}
            if self.true_index is not None:
                tags[int(self.true_index[i])] = "T"
            tags[int(pred[i])] = tags.get(int(pred[i]), "") + "P"
            for col, tag in tags.items():
                marks.append(
                    a.text(col, min(self.upper[i, col], 1.0) + 0.04, tag, ha="center", va="bottom",
                           fontsize=8, fontweight="bold")
                )
            self.marks_.append(marks)
            a.set_xticks(x, [str(v) for v in self.classes])
            a.set_ylim(-0.05, 1.2)
            a.set_title(f"query {self.indices[i]}", fontsize=9)
        axes[0].set_ylabel(r"$\hat p_c$ and bounds")
        self.axes_ = axes[:q]
        self.ax_, self.figure_ = axes[0], fig
        return self


# --------------------------------------------------------------------------
class BoundWidthDisplay:
    """Mean bound width vs. predicted probability, correct vs. wrong (fig. 3c).

    Parameters
    ----------
    table : BoundWidthTable
        From :func:`nwbound.metrics.bound_width_by_confidence`.
    label : str, optional
        Prefix for the legend entries (e.g. the model name).

    Attributes
    ----------
    lines_ : dict with keys "correct", "incorrect" of matplotlib Line2D
        Points at the centres of the non-empty bins.
    ax_, figure_ : matplotlib Axes and Figure

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
    >>> from nwbound.metrics import bound_width_by_confidence
    >>> from nwbound.plots import BoundWidthDisplay
    >>> table = bound_width_by_confidence([0, 1, 1], iv, n_bins=2)
    >>> disp = BoundWidthDisplay(table=table, label="NWC").plot()
    >>> disp.lines_["correct"].get_label(), disp.lines_["correct"].get_ydata().round(2).tolist()
    ('NWC: correct', [0.4])
    >>> plt.close(disp.figure_)
    """

    def __init__(self, *, table: Any, label: str | None = None) -> None:
        self.table = table
        self.label = label

    @classmethod
    def from_interval(
        cls,
        y_true: ArrayLike,
        interval: Any,
        *,
        classes: ArrayLike | None = None,
        n_bins: int = 10,
        label: str | None = None,
        ax: Any = None,
    ) -> "BoundWidthDisplay":
        """Compute the table from an interval and plot it.

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
        >>> from nwbound.plots import BoundWidthDisplay
        >>> disp = BoundWidthDisplay.from_interval([0, 1, 1], iv, n_bins=2)
        >>> disp.table.count_incorrect.tolist()
        [0, 1]
        >>> plt.close(disp.figure_)
        """
        table = _m.bound_width_by_confidence(y_true, interval, classes, n_bins)
        return cls(table=table, label=label).plot(ax=ax)

    @classmethod
    def from_arrays(
        cls,
        y_true: ArrayLike,
        proba: ArrayLike,
        epsilon: ArrayLike,
        *,
        classes: ArrayLike | None = None,
        n_bins: int = 10,
        label: str | None = None,
        ax: Any = None,
    ) -> "BoundWidthDisplay":
        """As :meth:`from_interval` from ``p̂`` and ``ε`` arrays of shape (n, C).

        Raises
        ------
        ValueError
            If ``epsilon`` does not have the shape of ``proba``.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")  # draw off-screen
        >>> import matplotlib.pyplot as plt
        >>> import numpy as np
        >>> proba = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]])
        >>> from nwbound.plots import BoundWidthDisplay
        >>> disp = BoundWidthDisplay.from_arrays([0, 1, 1], proba, np.full((3, 2), 0.2), n_bins=2)
        >>> disp.table.width_correct.round(2).tolist()
        [nan, 0.4]
        >>> plt.close(disp.figure_)
        """
        p = _check_proba(proba, "proba")
        eps = np.asarray(epsilon, dtype=float)
        if eps.shape != p.shape:
            raise ValueError(f"`epsilon` has shape {eps.shape} but `proba` has {p.shape}.")
        iv = SimpleNamespace(
            proba=p,
            lower=np.clip(p - eps, 0, 1),
            upper=np.clip(p + eps, 0, 1),
            epsilon=eps,
            vacuous=np.zeros(p.shape[0], dtype=bool),
        )
        return cls.from_interval(y_true, iv, classes=classes, n_bins=n_bins, label=label, ax=ax)

    def plot(self, ax: Any = None) -> "BoundWidthDisplay":
        """Draw mean width per bin for correct and incorrect predictions.

        Returns
        -------
        self

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
        >>> from nwbound.metrics import bound_width_by_confidence
        >>> from nwbound.plots import BoundWidthDisplay
        >>> fig, ax = plt.subplots()
        >>> disp = BoundWidthDisplay(table=bound_width_by_confidence([0, 1, 1], iv)).plot(ax=ax)
        >>> sorted(disp.lines_)
        ['correct', 'incorrect']
        >>> plt.close(disp.figure_)
        """
        fig, ax = _check_ax(ax)
        t = self.table
        centers = t.bin_center
        prefix = f"{self.label}: " if self.label else ""
        self.lines_ = {}
        for key, cnt, width, style in (
            ("correct", t.count_correct, t.width_correct, "o-"),
            ("incorrect", t.count_incorrect, t.width_incorrect, "s--"),
        ):
            keep = cnt > 0
            (self.lines_[key],) = ax.plot(centers[keep], width[keep], style, label=prefix + key)
        ax.set(
            xlim=(0, 1),
            xlabel=r"predicted probability $\max_c \hat p_c$",
            ylabel=r"mean bound width $2\varepsilon$",
        )
        ax.legend()
        self.ax_, self.figure_ = ax, fig
        return self


# --------------------------------------------------------------------------
class TypeErrorDisplay:
    """Type I and Type II error counts per class, with shares of the data set.

    Parameters
    ----------
    table : TypeErrorTable
        From :func:`nwbound.metrics.type_errors`.

    Attributes
    ----------
    bars_ : dict with keys "type_i", "type_ii" of BarContainer
        Bar heights are the counts per class.
    texts_ : dict with keys "type_i", "type_ii" of list of Text
        Percentage of the whole data set above each bar.
    ax_, figure_ : matplotlib Axes and Figure

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
    >>> from nwbound.metrics import type_errors
    >>> from nwbound.plots import TypeErrorDisplay
    >>> disp = TypeErrorDisplay(table=type_errors([0, 1, 1], iv)).plot()
    >>> [float(bar.get_height()) for bar in disp.bars_["type_i"]]
    [0.0, 1.0]
    >>> plt.close(disp.figure_)
    """

    def __init__(self, *, table: Any) -> None:
        self.table = table

    @classmethod
    def from_interval(
        cls,
        y_true: ArrayLike,
        interval: Any,
        *,
        classes: ArrayLike | None = None,
        threshold: float = 0.5,
        y_pred: ArrayLike | None = None,
        ax: Any = None,
    ) -> "TypeErrorDisplay":
        """Count the errors with :func:`nwbound.metrics.type_errors` and plot.

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
        >>> from nwbound.plots import TypeErrorDisplay
        >>> disp = TypeErrorDisplay.from_interval(["a", "b", "b"], iv, classes=["a", "b"], threshold=0.6)
        >>> disp.table.type_ii.tolist()  # query 2: lower 0.6 is not below 0.6
        [0, 0]
        >>> plt.close(disp.figure_)
        """
        table = _m.type_errors(y_true, interval, classes, threshold=threshold, y_pred=y_pred)
        return cls(table=table).plot(ax=ax)

    def plot(self, ax: Any = None, *, width: float = 0.4) -> "TypeErrorDisplay":
        """Draw grouped bars per class.

        Returns
        -------
        self

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
        >>> from nwbound.metrics import type_errors
        >>> from nwbound.plots import TypeErrorDisplay
        >>> disp = TypeErrorDisplay(table=type_errors([0, 1, 1], iv)).plot(width=0.3)
        >>> len(disp.texts_["type_ii"])
        2
        >>> plt.close(disp.figure_)
        """
        fig, ax = _check_ax(ax)
        t = self.table
        x = np.arange(len(t.classes))
        self.bars_, self.texts_ = {}, {}
        for key, counts, share, offset, name in (
            ("type_i", t.type_i, t.type_i_share, -width / 2, "Type I"),
            ("type_ii", t.type_ii, t.type_ii_share, width / 2, "Type II"),
        ):
            bars = ax.bar(x + offset, counts, width=width, label=name)
            self.bars_[key] = bars
            self.texts_[key] = [
                ax.text(xi + offset, h, f"{100 * s:.1f}%", ha="center", va="bottom", fontsize=8)
                for xi, h, s in zip(x, counts, share)
            ]
        ax.set_xticks(x, [str(c) for c in t.classes])
        ax.set(xlabel="true class", ylabel="count")
        ax.margins(y=0.12)
        ax.legend()
        self.ax_, self.figure_ = ax, fig
        return self
