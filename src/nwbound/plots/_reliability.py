"""The reliability diagram (accuracy per confidence bin) with the ECE."""

from __future__ import annotations

from typing import Any

from numpy.typing import ArrayLike

from .. import metrics as _m
from .._validation import check_interval
from ._base import _check_ax


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
        iv = check_interval(interval)
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
