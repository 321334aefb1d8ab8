"""``lipschitz="auto"``: a pilot L off the kernel sums' rows, a grid around it, and the held-out check."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["LipschitzAutoReport", "choose_lipschitz", "AUTO_LIPSCHITZ_EXPONENTS", "AUTO_CHECK_ROWS"]

#: The grid of ``lipschitz="auto"``: pilot × 2^k for these k; when the check rejects all of them,
#: once more for k = 3 … 8 before giving up. Not below pilot/2: on 12-D known-p fields (p a
#: logistic or a sine of 2 features, 3 000 rows, Euclidean and metric="auto") the held-out check
#: alone, on k = -6 … 2, picked pilot/8 … pilot/64, where 64–72 % of the intervals missed p; at
#: pilot/4 up to 6.7 % missed, at pilot/2 at most 0.6 % (benchmarks/bench_learned_space.py, grid).
AUTO_LIPSCHITZ_EXPONENTS = (-1, 0, 1, 2)
_EXTENDED_EXPONENTS = tuple(range(3, 9))
#: At most this many check rows (a fixed random subset) test the grid.
AUTO_CHECK_ROWS = 8192

NOTE = ("L is an assumption consistent with held-out data, not a certified fact: the check can only reject "
        "an L that is too small, and a small held-out set has little power to")


@dataclass(frozen=True)
class LipschitzAutoReport:
    """How ``lipschitz="auto"`` chose ``lipschitz_`` (the estimator's ``lipschitz_report_``).

    Attributes
    ----------
    value : float
        The chosen L, in the units of the space the kernel works in.
    pilot : float
        :func:`nwbound.assumptions.estimate_lipschitz` on the pilot rows (never the kernel sums' rows).
    n_pilot, n_check : int
        Rows of the pilot estimate and of the held-out check (disjoint from each other and from
        the kernel sums' rows; the check rows did not fit the map either).
    selection : LipschitzSelection
        Every grid value's check (:func:`nwbound.assumptions.select_lipschitz`).
    all_rejected : bool
        The check rejected every grid value, the extended one too: ``value`` is then the largest
        grid value, which the held-out rows reject (a warning said so).
    units : str
    floored : bool
        The smallest value not rejected lay below the pilot, but its check could not have
        rejected it whatever the labels (:func:`certified_evidence`): ``value`` is then the pilot.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, (3000, 2)); y = (rng.random(3000) < 1 / (1 + np.exp(-3 * X[:, 0]))).astype(int)
    >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.5, lipschitz="auto").fit(X, y)
    >>> clf.lipschitz_ == clf.lipschitz_report_.value
    True
    >>> "not a certified fact" in str(clf.lipschitz_report_)
    True
    """

    value: float
    pilot: float
    n_pilot: int
    n_check: int
    selection: Any
    all_rejected: bool
    units: str
    floored: bool = False

    def __str__(self) -> str:
        head = (f"lipschitz='auto' chose L = {self.value:.4g} ({self.units}): the smallest grid value "
                f"(pilot {self.pilot:.4g} × 2^k, from {self.n_pilot} pilot rows) that {self.n_check} held-out "
                f"check rows do not reject.")
        if self.floored:
            head = (f"lipschitz='auto' chose L = {self.value:.4g} ({self.units}), the pilot estimate "
                    f"({self.n_pilot} pilot rows): at the smallest grid value they accept, the {self.n_check} held-out "
                    "check rows give no certified row whose errors could have rejected it, so nothing supports "
                    "going below the pilot.")
        if self.all_rejected:
            head = (f"lipschitz='auto': the {self.n_check} held-out check rows reject every L on the grid "
                    f"(up to {self.value:.4g}); L = {self.value:.4g} is used, and the data say it is too small.")
        return f"{head}\n{self.selection}\n{NOTE}."

    def __repr__(self) -> str:
        return (f"LipschitzAutoReport(value={self.value:.4g}, pilot={self.pilot:.4g}, n_check={self.n_check}, "
                f"all_rejected={self.all_rejected}; {NOTE})")


def certified_evidence(check: Any) -> bool:
    """Whether the certified-rows test of ``check`` could have rejected its L (some labels would have).

    A smaller L is wanted for the certificates it gives; when no check row is certified at that L,
    or no count of errors among them could exceed the test's tail, the held-out rows hold no
    evidence that the certificates it gives are sound, so ``lipschitz="auto"`` does not go below
    its pilot estimate on that check (the per-class count tests alone measured too weak for that:
    on a 60-D field they accepted pilot/2, where 8.8 % of intervals missed p).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from nwbound.spaces import certified_evidence
    >>> none = SimpleNamespace(tests=({"test": "certified rows: errors", "used": False},
    ...                               {"test": "class 1 in rows predicted 1: too few", "used": True}))
    >>> some = SimpleNamespace(tests=({"test": "certified rows: errors", "used": True},))
    >>> certified_evidence(none), certified_evidence(some)
    (False, True)
    """
    return any(bool(t.get("used", False)) and str(t.get("test", "")).startswith("certified rows")
               for t in getattr(check, "tests", ()))


def pilot_lipschitz(pilot_Z: np.ndarray, pilot_y: np.ndarray, *, random_state: Any = 0) -> float:
    """The pilot L of ``lipschitz="auto"``: :func:`nwbound.assumptions.estimate_lipschitz` on held-out rows.

    Raises a ValueError naming ``lipschitz`` when no finite positive estimate comes out.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.spaces import pilot_lipschitz
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.uniform(-1, 1, (400, 1)); y = (rng.random(400) < (1 + Z[:, 0]) / 2).astype(int)
    >>> pilot_lipschitz(Z, y) > 0
    True
    """
    from ..assumptions import estimate_lipschitz

    try:
        pilot = float(estimate_lipschitz(pilot_Z, pilot_y, random_state=random_state).value)
    except ValueError as exc:
        raise ValueError(f"lipschitz='auto' could not estimate a pilot L on its {pilot_Z.shape[0]} pilot rows ({exc}); "
                         "give more rows or a numeric lipschitz.") from None
    if not np.isfinite(pilot) or pilot <= 0:
        raise ValueError(f"lipschitz='auto': the pilot estimate of L is {pilot!r}; give a numeric lipschitz.")
    return pilot


def choose_lipschitz(model: Any, pilot_Z: np.ndarray, pilot_y: np.ndarray, X_check: np.ndarray,
                     y_check: np.ndarray, *, units: str, random_state: Any = 0,
                     pilot: float | None = None) -> LipschitzAutoReport:
    """The smallest L of ``pilot × 2^k`` that the held-out check does not reject.

    Parameters
    ----------
    model : fitted bounded classifier
        Its kernel sums must not contain the pilot or check rows (nor may the check rows have
        fitted its map).
    pilot_Z, pilot_y : ndarray
        Pilot rows **in the space the kernel works in** and their labels.
    X_check, y_check : ndarray
        Check rows as the model takes queries (original features) and their labels.
    units : str
    random_state : int, default=0
    pilot : float or None, default=None
        The pilot L if already estimated (:func:`pilot_lipschitz`); None estimates it here.

    Returns
    -------
    LipschitzAutoReport

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.spaces import choose_lipschitz
    >>> rng = np.random.default_rng(1)
    >>> X = rng.uniform(-1, 1, (4000, 1)); y = (rng.random(4000) < (1 + X[:, 0]) / 2).astype(int)
    >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=1.0).fit(X[:2000], y[:2000])
    >>> rep = choose_lipschitz(clf, X[2000:3000], y[2000:3000], X[3000:], y[3000:], units="x")
    >>> rep.n_check, rep.value == rep.selection.chosen
    (1000, True)
    """
    from ..lipschitz_check import select_lipschitz

    if pilot is None:
        pilot = pilot_lipschitz(pilot_Z, pilot_y, random_state=random_state)
    if X_check.shape[0] > AUTO_CHECK_ROWS:
        keep = np.sort(np.random.default_rng(random_state).choice(X_check.shape[0], AUTO_CHECK_ROWS, replace=False))
        X_check, y_check = X_check[keep], y_check[keep]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "every L rejected": said below, once, if it stays so
        selection = select_lipschitz(model, X_check, y_check, [pilot * 2.0**k for k in AUTO_LIPSCHITZ_EXPONENTS])
        if selection.all_rejected:
            selection = select_lipschitz(model, X_check, y_check, [pilot * 2.0**k for k in _EXTENDED_EXPONENTS])
    value = selection.chosen if selection.chosen is not None else max(selection.grid)
    floored = False
    if value < pilot and not certified_evidence(selection.checks[list(selection.grid).index(value)]):
        # Below the estimate only on evidence about the certificates it buys (certified_evidence);
        # otherwise keep the pilot (every larger grid value passed the check too).
        value, floored = min(g for g in selection.grid if g >= pilot), True
    report = LipschitzAutoReport(value=float(value), pilot=pilot, n_pilot=int(pilot_Z.shape[0]),
                                 n_check=int(X_check.shape[0]), selection=selection,
                                 all_rejected=bool(selection.all_rejected), units=units, floored=floored)
    if report.all_rejected:
        warnings.warn(f"{report}\nThe bounds at this L rest on an assumption the held-out rows reject: "
                      "try another metric=, or read them as a heuristic.", UserWarning, stacklevel=3)
    return report
