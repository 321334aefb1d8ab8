"""Pieces every part of the ECG experiment shares: settings, the one-line error, interval helpers.

Private to :mod:`nwbound.experiments`. :mod:`nwbound.experiments.ecg` re-exports the
public names (:func:`bound_settings`, :func:`expand_interval`,
:func:`is_symmetric_form`); the intra-patient (``_ecg_split``), inter-patient
(``_ecg_inter``) and patient-adaptive (:mod:`nwbound.experiments.ecg_adaptive`)
parts import them from here, so none of them imports another back.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any, Iterator

import numpy as np

from .._result import PredictionInterval
from ._common import PAPER_SETTING

DELTA = 0.05
# float32 distances for the regular NWC from this size on (dense GEMM, ~2x faster;
# the brief asks for it at full size, 60 000 costs nearly as much).
FLOAT32_FROM = 60_000
CLASS_NAMES = ("N", "S", "V", "F", "Q")
OUR_BOUNDS = ("hoeffding", "chernoff", "selfnormalized")


def _command_error(message: str) -> Exception:
    from ..utils import UserError as CommandError

    return CommandError(" ".join(str(message).split()))  # one line


# ---------------------------------------------------------------------------
# helpers (public: used by the tests)
# ---------------------------------------------------------------------------
def bound_settings(bound: str = "chernoff") -> dict[str, dict[str, Any]]:
    """Bound settings of the NWC rows: the paper's and our valid one.

    Parameters
    ----------
    bound : {"chernoff", "hoeffding", "selfnormalized"}, default "chernoff"
        Form of our bound (simultaneous δ/C coverage); the default is the
        estimators' default.

    Returns
    -------
    dict
        ``{"paper": PAPER_SETTING, "ours": {"bound": bound, "coverage": "simultaneous"}}``,
        for ``NadarayaWatsonClassifier.predict_interval(X, bounds=...)``, which builds
        every interval from one pass of kernel sums.

    Examples
    --------
    >>> sorted(bound_settings()["ours"].items())
    [('bound', 'chernoff'), ('coverage', 'simultaneous')]
    >>> bound_settings("hoeffding")["paper"]["bound"]
    'paper'
    """
    if bound not in OUR_BOUNDS:
        raise ValueError(f"bound must be one of {OUR_BOUNDS}, got {bound!r}")
    return {"paper": dict(PAPER_SETTING), "ours": {"bound": bound, "coverage": "simultaneous"}}


def is_symmetric_form(bound: str) -> bool:
    """Whether a bound form gives ``p̂ ± ε`` with one ε per query (every form but ``"chernoff"``).

    Examples
    --------
    >>> is_symmetric_form("hoeffding"), is_symmetric_form("paper"), is_symmetric_form("chernoff")
    (True, True, False)
    """
    return bound != "chernoff"


def expand_interval(
    iv: PredictionInterval, present: np.ndarray, n_classes: int = 5, *, symmetric: bool = False
) -> PredictionInterval:
    """Widen an interval to all ``n_classes`` columns (labels 0..n_classes−1).

    The present columns keep their limits unchanged (asymmetric Chernoff
    limits included). A class absent from the training set has ``p̂ = 0``,
    lower limit 0 and upper limit:

    * ``symmetric=True`` (the ``p̂ ± ε`` forms: Hoeffding, self-normalised,
      the paper's, the CME's): the query's ε, the same for every class — the
      bound of an all-zero class indicator;
    * ``symmetric=False`` (any form, e.g. band-Chernoff): the smallest upper
      limit of the present classes. The Chernoff upper end grows with the
      class sum, so the all-zero class's own end is at most this; for the
      ``p̂ ± ε`` forms it is ``min p̂ + ε ≥ ε``, valid but wider.

    Like the estimator's, the absent classes' limits are a display convention
    outside its δ/C accounting (which counts the classes seen in training).

    Parameters
    ----------
    iv : PredictionInterval
        Columns in the order of ``present``.
    present : array-like of int
        Label (0..n_classes−1) of each column of ``iv``, increasing.
    n_classes : int, default=5
    symmetric : bool, default=False
        True only if ``iv`` is a ``p̂ ± ε`` interval (see :func:`is_symmetric_form`).

    Returns
    -------
    PredictionInterval
        With ``n_classes`` columns; ``iv`` itself when every class is present.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> X = np.linspace(0, 1, 40)[:, None]; y = np.where(X[:, 0] < 0.5, 0, 3)
    >>> iv = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=0.5).fit(X, y).predict_interval([[0.1]])
    >>> full = expand_interval(iv, np.array([0, 3]))
    >>> full.proba.shape
    (1, 5)
    >>> bool(full.upper[0, 1] == iv.upper[0].min())
    True
    """
    present = np.asarray(present, dtype=np.intp)
    if present.ndim != 1 or present.shape[0] != iv.proba.shape[1]:
        raise ValueError(
            f"present must hold one label per column of the interval ({iv.proba.shape[1]}), got shape "
            f"{present.shape}."
        )
    if present.shape[0] == n_classes and np.array_equal(present, np.arange(n_classes)):
        return iv
    n = iv.proba.shape[0]
    if symmetric:
        eps_absent = iv.epsilon.max(axis=1)  # one ε per query: every column holds it
    else:
        eps_absent = iv.upper.min(axis=1) if iv.upper.shape[1] else np.ones(n)

    def widen(a: np.ndarray, fill: np.ndarray | float) -> np.ndarray:
        full = np.empty((n, n_classes))
        full[:] = fill if np.ndim(fill) == 0 else np.asarray(fill)[:, None]
        full[:, present] = a
        return full

    return PredictionInterval(
        proba=widen(iv.proba, 0.0),
        lower=widen(iv.lower, 0.0),
        upper=widen(iv.upper, eps_absent),
        epsilon=widen(iv.epsilon, eps_absent),
        # bias/sampling are the query's (Hoeffding) parts, one per query in every form.
        bias=widen(iv.bias, iv.bias.max(axis=1)),
        sampling=widen(iv.sampling, iv.sampling.max(axis=1)),
        kappa=iv.kappa, n_eff=iv.n_eff, vacuous=iv.vacuous, bandwidth=iv.bandwidth,
        outside_box=iv.outside_box,
    )


def _expand_proba(proba: np.ndarray, present: np.ndarray, n_classes: int = 5) -> np.ndarray:
    full = np.zeros((proba.shape[0], n_classes))
    full[:, np.asarray(present, dtype=np.intp)] = proba
    return full


@contextlib.contextmanager
def _quiet_bounds() -> Iterator[None]:
    """Silence the useless-bound warning: the tables report certified and trivial shares."""
    import warnings

    from ..diagnostics import UselessBoundWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UselessBoundWarning)
        yield


@contextlib.contextmanager
def _blas_threads(threads: int | None) -> Iterator[None]:
    if threads is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=int(threads)):
        yield


# ---------------------------------------------------------------------------
# numbers in the summaries
# ---------------------------------------------------------------------------
def _fmt(v: Any, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)
