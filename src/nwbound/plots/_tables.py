"""Displays of the bound tables: widths by confidence, Type I/II errors."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .. import metrics as _m
from .._validation import check_proba
from ._base import _check_ax


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
        p = check_proba(proba, "proba")
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
