"""Per-sample intervals of the class probabilities."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._validation import as_1d, check_int_range, check_interval, check_same_length, encode_labels
from ._base import pyplot
from ._labels import _labels_for


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
            If ``indices`` is empty, not integer or out of range, ``max_queries`` is
            below 1, or ``y_true`` has another length than the interval.

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
        iv = check_interval(interval)
        n = iv.proba.shape[0]
        labels = _labels_for(classes, iv.n_classes)
        if indices is None:
            max_queries = check_int_range(max_queries, "max_queries", 1, hint="It is how many queries to show.")
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
            t = as_1d(y_true, "y_true")
            check_same_length(("y_true", t), ("interval", iv.proba))
            true_index = encode_labels(t[idx], None if classes is None else labels, "y_true", iv.n_classes)
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
