"""An ECG strip annotated with each beat's label, prediction and bound (what a cardiologist reads)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ._base import _check_ax

__all__ = ["ECGStripDisplay"]


class ECGStripDisplay:
    """A stretch of ECG with one mark per beat: reference label, prediction and bound.

    Above each beat: the reference label (top line) and the prediction (second
    line, red when wrong); below: ``✓`` for a beat the bound certifies or ``?`` for
    one that needs review, and the error ceiling ``≤ e`` (the guaranteed upper bound
    on the probability that the prediction is wrong, in %). With ``locally_supported``,
    a certified beat whose predicted class has no beat among the patient's own local
    (first-minutes) beats is marked ``(✓)`` in purple: its certificate rests on the
    other patients' beats alone.

    Parameters
    ----------
    signal : array-like of shape (n_samples,)
        The lead, in physical units (mV).
    fs : float
        Sampling rate (Hz).
    beat_sample : array-like of int, shape (n_beats,)
        Beat positions (samples of ``signal``).
    y_true, y_pred : array-like of int, shape (n_beats,)
        Reference and predicted class indices into ``class_names``.
    certified : array-like of bool, shape (n_beats,)
        Whether the bound certifies each prediction.
    error_upper : array-like of float, shape (n_beats,)
        Ceiling on the probability of error of each prediction, in [0, 1].
    class_names : sequence of str, default ("N", "S", "V", "F", "Q")
    locally_supported : array-like of bool, shape (n_beats,), optional
        Whether each prediction's class occurs among the patient's local beats
        (:func:`nwbound.experiments.ecg_adaptive.locally_supported`); None draws
        every certified beat as ``✓``.
    start_s, duration_s : float, default 0.0, 10.0
        The window shown (seconds from the start of ``signal``).
    title : str, optional

    Attributes
    ----------
    line_ : matplotlib Line2D
        The ECG trace.
    marks_ : list of matplotlib Text
        The per-beat annotations drawn.
    ax_, figure_ : matplotlib Axes and Figure

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.plots._ecg_strip import ECGStripDisplay
    >>> fs = 360.0; t = np.arange(int(4 * fs)) / fs
    >>> beats = np.array([180, 540, 900, 1260])
    >>> sig = np.exp(-((t[:, None] - beats / fs) ** 2) / 2e-4).sum(axis=1)
    >>> disp = ECGStripDisplay(signal=sig, fs=fs, beat_sample=beats, y_true=[0, 1, 0, 2],
    ...                        y_pred=[0, 0, 0, 2], certified=[True, False, True, True],
    ...                        error_upper=[0.05, 0.6, 0.04, 0.2], duration_s=4.0).plot()
    >>> len(disp.marks_)
    12
    >>> disp = ECGStripDisplay(signal=sig, fs=fs, beat_sample=beats, y_true=[0, 1, 0, 2],
    ...                        y_pred=[0, 1, 0, 2], certified=[True, True, True, True],
    ...                        error_upper=[0.05, 0.4, 0.04, 0.2], duration_s=4.0,
    ...                        locally_supported=[True, False, True, True]).plot()
    >>> [m.get_text().split()[0] for m in disp.marks_[2::3]]
    ['✓', '(✓)', '✓', '✓']
    """

    def __init__(
        self,
        *,
        signal: ArrayLike,
        fs: float,
        beat_sample: ArrayLike,
        y_true: ArrayLike,
        y_pred: ArrayLike,
        certified: ArrayLike,
        error_upper: ArrayLike,
        class_names: Sequence[str] = ("N", "S", "V", "F", "Q"),
        locally_supported: ArrayLike | None = None,
        start_s: float = 0.0,
        duration_s: float = 10.0,
        title: str | None = None,
    ) -> None:
        self.signal = np.asarray(signal, dtype=np.float64)
        if self.signal.ndim != 1 or self.signal.size == 0:
            raise ValueError(f"`signal` must be a non-empty 1-D array, got shape {self.signal.shape}.")
        if isinstance(fs, bool) or not np.isfinite(fs) or fs <= 0:
            raise ValueError(f"`fs` must be a positive sampling rate in Hz, got {fs!r}.")
        self.fs = float(fs)
        self.beat_sample = np.asarray(beat_sample, dtype=np.int64)
        n = self.beat_sample.shape[0]
        arrays = {
            "y_true": np.asarray(y_true, dtype=np.int64),
            "y_pred": np.asarray(y_pred, dtype=np.int64),
            "certified": np.asarray(certified, dtype=bool),
            "error_upper": np.asarray(error_upper, dtype=np.float64),
            "locally_supported": np.ones(n, dtype=bool) if locally_supported is None
            else np.asarray(locally_supported),
        }
        for name, arr in arrays.items():
            if arr.shape != (n,):
                raise ValueError(f"`{name}` must have shape ({n},) like `beat_sample`, got {arr.shape}.")
        self.class_names = tuple(str(c) for c in class_names)
        for name in ("y_true", "y_pred"):
            a = arrays[name]
            if n and (a.min() < 0 or a.max() >= len(self.class_names)):
                raise ValueError(f"`{name}` must hold indices into class_names {self.class_names}.")
        e = arrays["error_upper"]
        if not np.all(np.isfinite(e)) or np.any(e < 0) or np.any(e > 1 + 1e-9):
            raise ValueError("`error_upper` must lie in [0, 1].")
        if not (np.isfinite(start_s) and np.isfinite(duration_s) and start_s >= 0 and duration_s > 0):
            raise ValueError(f"need start_s >= 0 and duration_s > 0, got {start_s!r}, {duration_s!r}.")
        self.y_true, self.y_pred = arrays["y_true"], arrays["y_pred"]
        self.certified, self.error_upper = arrays["certified"], e
        if arrays["locally_supported"].dtype != bool:
            raise ValueError("`locally_supported` must be an array of booleans.")
        self.locally_supported = arrays["locally_supported"]
        self.start_s, self.duration_s, self.title = float(start_s), float(duration_s), title

    def plot(self, ax: Any = None) -> ECGStripDisplay:
        """Draw the strip.

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Where to draw; a new wide figure when None.

        Returns
        -------
        ECGStripDisplay
            ``self``, with ``line_``, ``marks_``, ``ax_`` and ``figure_`` set.

        Raises
        ------
        ValueError
            If the window starts past the end of the signal.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")  # draw off-screen
        >>> import matplotlib.pyplot as plt
        >>> import numpy as np
        >>> from nwbound.plots import ECGStripDisplay
        >>> disp = ECGStripDisplay(signal=np.zeros(720), fs=360.0, beat_sample=[180, 540],
        ...                        y_true=[0, 2], y_pred=[0, 0], certified=[True, False],
        ...                        error_upper=[0.05, 0.7], duration_s=2.0).plot()
        >>> disp.line_.get_xdata().shape
        (720,)
        >>> plt.close(disp.figure_)
        """
        if ax is None:
            from ._base import pyplot

            fig, ax = pyplot().subplots(figsize=(max(6.0, 1.4 * self.duration_s), 3.4))
        else:
            fig, ax = _check_ax(ax)
        lo = int(round(self.start_s * self.fs))
        hi = min(self.signal.size, int(round((self.start_s + self.duration_s) * self.fs)))
        if hi <= lo:
            raise ValueError(f"the window starting at {self.start_s} s lies past the end of the signal.")
        t = np.arange(lo, hi) / self.fs
        seg = self.signal[lo:hi]
        (self.line_,) = ax.plot(t, seg, color="0.15", lw=0.8)
        top, bottom = float(seg.max()), float(seg.min())
        span = max(top - bottom, 1e-6)
        self.marks_ = []
        inside = np.flatnonzero((self.beat_sample >= lo) & (self.beat_sample < hi))
        for i in inside:  # a loop over the ≈ 10–30 beats drawn, not a hot path
            x = self.beat_sample[i] / self.fs
            wrong = self.y_pred[i] != self.y_true[i]
            self.marks_.append(ax.text(x, top + 0.30 * span, self.class_names[self.y_true[i]],
                                       ha="center", fontsize=8, color="0.2"))
            self.marks_.append(ax.text(x, top + 0.12 * span, self.class_names[self.y_pred[i]],
                                       ha="center", fontsize=8, weight="bold",
                                       color="tab:red" if wrong else "tab:blue"))
            ok, local = bool(self.certified[i]), bool(self.locally_supported[i])
            sign, colour = ("✓", "tab:green") if ok and local else (("(✓)", "tab:purple") if ok else ("?", "tab:orange"))
            self.marks_.append(ax.text(x, bottom - 0.22 * span, f"{sign}\n≤{100 * self.error_upper[i]:.0f}%",
                                       ha="center", va="top", fontsize=7, color=colour))
        ax.set_ylim(bottom - 0.55 * span, top + 0.5 * span)
        ax.set_xlim(t[0], t[-1])
        ax.set_xlabel("time (s)")
        ax.set_ylabel("mV")
        legend = "reference / prediction (red: wrong)   below: ✓ certified, ? review, ≤ error ceiling"
        if not self.locally_supported.all():
            legend += "   (✓) certified, but no local beat of the predicted class"
        ax.text(0.0, 1.01, legend, transform=ax.transAxes, fontsize=7, color="0.3")
        if self.title:
            ax.set_title(self.title, fontsize=9, pad=14)
        self.ax_, self.figure_ = ax, fig
        return self
