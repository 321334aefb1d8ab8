"""``lipschitz="auto"``: a pilot L off the kernel sums' rows, a grid around it, and the held-out check."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .._stack import caller_stacklevel
from ._auto import resolution_sentence, scan_sentence, shared_raise_sentence

__all__ = ["LipschitzAutoReport", "CrossFitReports", "check_subset", "choose_lipschitz", "chooses_lipschitz",
           "pilot_lipschitz", "lipschitz_units",
           "two_constant_pilot", "AUTO_LIPSCHITZ_EXPONENTS", "AUTO_CHECK_ROWS"]

#: The grid of ``lipschitz="auto"``: pilot × 2^k for these k, tried in stages (the pilot; then the
#: larger values where the check rejects it; then k = 3 … 8 before giving up), the first stage with
#: a value not rejected deciding. Never below the pilot: the held-out check has little
#: power against small two-sided misses (they cancel in every aggregate labels can see), so it may
#: raise L but not lower it. Measured: on a smooth 12-D field (p = expit(x·a − 2.5 sin(4 x·v))) the
#: step to pilot/2 missed p on 13–25 % of queries while 4 000 fresh labelled rows did not reject it;
#: at the pilot, 0.25 % (notes: learned-space.md, "What the default route taught us").
AUTO_LIPSCHITZ_EXPONENTS = (0, 1, 2)
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
    pilot_source : str
        Where the pilot came from (an estimate on pilot rows, or the two-constant space).

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
    pilot_source: str = ""

    def __str__(self) -> str:
        source = self.pilot_source or f"an estimate on {self.n_pilot} pilot rows"
        head = (f"lipschitz='auto' chose L = {self.value:.4g} ({self.units}): the smallest of pilot × 2^k, k ≥ 0, "
                f"that {self.n_check} held-out check rows do not reject. L never goes below the pilot: the check "
                f"can raise it, not lower it. The pilot, {self.pilot:.4g}, comes from {source}.")
        if self.all_rejected:
            head = (f"lipschitz='auto': the {self.n_check} held-out check rows reject every L on the grid "
                    f"(up to {self.value:.4g}); L = {self.value:.4g} is used, and the data say it is too small.")
        return f"{head}\n{self.selection}\n{NOTE}."

    def __repr__(self) -> str:
        return (f"LipschitzAutoReport(value={self.value:.4g}, pilot={self.pilot:.4g}, n_check={self.n_check}, "
                f"all_rejected={self.all_rejected}; {NOTE})")


class CrossFitReports(tuple):
    """The reports of a cross-fitted model's K models (``lipschitz_report_``, ``metric_report_``),
    one per model as a tuple, printed as one table.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(600, 3)); y = (rng.random(600) < 1 / (1 + np.exp(-2 * X[:, 0]))).astype(int)
    >>> clf = NadarayaWatsonClassifier(random_state=0).fit(X, y)
    >>> reports = clf.lipschitz_report_
    >>> len(reports) == len(clf.cross_fit_models_), reports[0].value == clf.cross_fit_models_[0].lipschitz_
    (True, True)
    >>> str(reports).splitlines()[0].startswith("lipschitz='auto' on")
    True
    """

    def __str__(self) -> str:
        if not self:
            return "no cross-fitted models"
        k = len(self)
        if isinstance(self[0], LipschitzAutoReport):
            lines = [f"lipschitz='auto' on {k} cross-fitted models (each interval at level δ/{k}, intersected); each "
                     "model's L is the smallest of pilot × 2^k, k ≥ 0, that its held-out check rows do not reject:",
                     f"  {'model':>5}  {'L used':>9}  {'pilot':>9}  {'check rows':>10}  verdict"]
            for i, r in enumerate(self):
                verdict = "every grid L rejected" if r.all_rejected else ("pilot kept" if r.value == r.pilot else
                                                                           "raised above the pilot")
                lines.append(f"  {i:>5}  {r.value:>9.4g}  {r.pilot:>9.4g}  {r.n_check:>10}  {verdict}")
            if self[0].pilot_source:
                lines.append(f"  pilot of model 0: {self[0].pilot_source}.")
            lines.append(f"{NOTE}.")
            return "\n".join(lines)
        lines = [f"metric='auto' on {k} cross-fitted models:"]
        for i, r in enumerate(self):
            first = str(r).splitlines()[0]
            lines.append(f"  model {i}: {first}")
        scans = [(i, r.scan) for i, r in enumerate(self) if getattr(r, "scan", None) is not None]
        if scans:  # what the scan looked at, once; whether it raised L_r, per model
            lines.append(f"  model {scans[0][0]}: {scan_sentence(scans[0][1])}")
            for i, scan in scans[1:]:
                found = (f"raised L_r to {scan['lipschitz']:.3g}" if scan["raised"] else "left L_r unchanged")
                lines.append(f"  model {i}: the same scan on its own rows {found}.")
        for i, r in enumerate(self):
            if getattr(r, "shared_lipschitz", None) is not None:
                lines.append(f"  model {i}: {shared_raise_sentence(r.shared_lipschitz)}")
        return "\n".join(lines)


def chooses_lipschitz(lipschitz: Any, margin: Any) -> bool:
    """Whether ``fit`` chooses L by the held-out check (:func:`choose_lipschitz`):
    ``lipschitz="auto"`` (the default) and no ``margin``.

    A ``margin`` states the separable-classes assumption instead, so the default ``"auto"`` L then
    does not apply (user guide, "Defaults").

    Parameters
    ----------
    lipschitz : float, "auto" or None
        The estimator's ``lipschitz``.
    margin : float or None
        The estimator's ``margin``.

    Returns
    -------
    bool

    Examples
    --------
    >>> from nwbound.spaces import chooses_lipschitz
    >>> chooses_lipschitz("auto", None), chooses_lipschitz("auto", 0.1), chooses_lipschitz(1.0, None)
    (True, False, False)
    """
    return isinstance(lipschitz, str) and lipschitz == "auto" and margin is None


def lipschitz_units(space: Any) -> str:
    """The units an L of ``lipschitz="auto"`` is read in, for its report.

    Parameters
    ----------
    space : fitted LearnedSpace or None
        The estimator's ``metric_`` (None: the features as given).

    Returns
    -------
    str

    Examples
    --------
    >>> from nwbound.spaces import lipschitz_units
    >>> lipschitz_units(None)
    'in the units of the features as given'
    """
    if space is None:
        return "in the units of the features as given"
    return "in the units of the mapped space metric_.transform(X)"


def two_constant_pilot(space: Any) -> tuple[float, str]:
    """The pilot L that the two-constant space of ``metric="auto"`` states, and where it comes
    from (the report's ``pilot_source``).

    The space assumes ``|Δp| ≤ ‖Δs‖ + L_r‖Δx‖`` and puts the features at ``c·L_r``, so L is
    ``√(1 + 1/c²)`` (:attr:`~nwbound.spaces.LearnedSpace.lipschitz_`): no pilot rows needed;
    ``√(1 + ρ²/c²)`` where the second, raise-only estimate of ``L_r`` is ``ρ`` times larger. The
    source ends with the estimate's resolution (:func:`resolution_sentence`).

    Parameters
    ----------
    space : fitted LearnedSpace
        ``LearnedSpace("auto")`` fitted with held-out rows.

    Returns
    -------
    pilot : float
    source : str

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.spaces import LearnedSpace, two_constant_pilot
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, (600, 2)); y = (rng.random(600) < (1 + X[:, 0]) / 2).astype(int)
    >>> space = LearnedSpace("auto", random_state=0).fit(X[:400], y[:400], held_out=(X[400:], y[400:]))
    >>> pilot, source = two_constant_pilot(space)
    >>> pilot == space.lipschitz_, source.startswith("the two-constant space")
    (True, True)
    """
    source = (f"the two-constant space: |Δp| ≤ ‖Δs‖ + L_r‖Δx‖ with L_r = {space.feature_weight_:.4g} "
              f"estimated on {space.n_held_out_} held-out rows, the features at c·L_r with c = "
              f"{space.balance_:.3g}, so L = √(1 + 1/c²)")
    if space.residual_lipschitz_ > space.feature_weight_:
        shared = getattr(space, "shared_residual_lipschitz_", None) is not None
        by = ("another cross-fitted model's raise" if shared else "the directional scan"
              if space.scan_ is not None and space.scan_["raised"] else "a second estimate")
        source += (f", raised to √(1 + ρ²/c²) by {by} L_r = {space.residual_lipschitz_:.4g}"
                   + ("" if shared else " on the rows the score model never saw")
                   + f" (ρ = {space.residual_lipschitz_ / space.feature_weight_:.3g})")
    if np.isfinite(space.resolution_):
        source += ". " + resolution_sentence(space.residual_lipschitz_, space.resolution_, space.n_resolution_rows_)[:-1]
    if space.scan_ is not None:
        source += ". " + scan_sentence(space.scan_)[:-1]
    return space.lipschitz_, source


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


def check_subset(n_rows: int, random_state: Any = 0) -> np.ndarray | None:
    """Which of ``n_rows`` check rows :func:`choose_lipschitz` tests: None (all of them) up to
    ``AUTO_CHECK_ROWS``, else a fixed random subset of that many (sorted positions).

    Parameters
    ----------
    n_rows : int
        Check rows given.
    random_state : int, default=0
        :func:`choose_lipschitz`'s ``random_state``.

    Returns
    -------
    ndarray of int or None

    Examples
    --------
    >>> from nwbound.spaces import AUTO_CHECK_ROWS, check_subset
    >>> check_subset(100) is None, check_subset(AUTO_CHECK_ROWS + 1).shape
    (True, (8192,))
    """
    if n_rows <= AUTO_CHECK_ROWS:
        return None
    return np.sort(np.random.default_rng(random_state).choice(n_rows, AUTO_CHECK_ROWS, replace=False))


def choose_lipschitz(model: Any, pilot_Z: np.ndarray, pilot_y: np.ndarray, X_check: np.ndarray,
                     y_check: np.ndarray, *, units: str, random_state: Any = 0,
                     pilot: float | None = None, pilot_source: str = "",
                     mapped: np.ndarray | None = None) -> LipschitzAutoReport:
    """The smallest L of ``pilot × 2^k`` (``k ≥ 0``) that the held-out check does not reject.

    Parameters
    ----------
    model : fitted bounded classifier
        Its kernel sums must not contain the pilot or check rows (nor may the check rows have
        fitted its map).
    pilot_Z, pilot_y : ndarray or None
        Pilot rows **in the space the kernel works in** and their labels (None when ``pilot``
        is given and needs no rows).
    X_check, y_check : ndarray
        Check rows as the model takes queries (original features) and their labels.
    units : str
    random_state : int, default=0
    pilot : float or None, default=None
        The pilot L if already known (:func:`pilot_lipschitz`, or the two-constant space's
        ``LearnedSpace.lipschitz_``); None estimates it here on ``pilot_Z``.
    pilot_source : str, default=""
        Where a given ``pilot`` came from, for the report.
    mapped : ndarray or None, default=None
        ``model.metric_.transform(X_check)`` where the caller has it (the fit's score model validated
        on these rows: ``LearnedSpace.fit_transform_held_out``), read instead of mapping them again.

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
    keep = check_subset(X_check.shape[0], random_state)
    if keep is not None:
        X_check, y_check = X_check[keep], y_check[keep]
        mapped = None if mapped is None else mapped[keep]
    # Upward only, and lazily: the pilot first; larger values only where the check rejects it (a
    # check per grid value is a Chernoff search over the check rows: the fit's largest cost).
    stages = ([pilot], [pilot * 2.0**k for k in AUTO_LIPSCHITZ_EXPONENTS[1:]],
              [pilot * 2.0**k for k in _EXTENDED_EXPONENTS])
    grid, checks = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "every L rejected": said below, once, if it stays so
        for stage in stages:
            selection = select_lipschitz(model, X_check, y_check, stage, mapped=mapped)
            grid += list(selection.grid)
            checks += list(selection.checks)
            if not selection.all_rejected:
                break
    selection = replace(selection, grid=tuple(grid), checks=tuple(checks))
    value = selection.chosen if selection.chosen is not None else max(selection.grid)
    report = LipschitzAutoReport(value=float(value), pilot=pilot, n_pilot=0 if pilot_Z is None else int(pilot_Z.shape[0]),
                                 n_check=int(X_check.shape[0]), selection=selection,
                                 all_rejected=bool(selection.all_rejected), units=units, pilot_source=pilot_source)
    if report.all_rejected:
        warnings.warn(f"{report}\nThe bounds at this L rest on an assumption the held-out rows reject: "
                      "try another metric=, or read them as a heuristic.", UserWarning, stacklevel=caller_stacklevel())
    return report
