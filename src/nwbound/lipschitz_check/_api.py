"""The public entry points of the held-out check: :func:`check_lipschitz` and :func:`select_lipschitz`."""

from __future__ import annotations

import numbers
import warnings
from typing import Any, Sequence

import numpy as np

from .._validation import check_positive
from ._inputs import (_check_certified_at, _check_flag, _check_flags, _check_levels, _check_mapped, _check_model,
                      _check_values)
from ._results import LipschitzCheck, LipschitzSelection
from ._run import _run_check_families, _run_checks

DEFAULT_FREE_SHARE = 0.002
"""Default share ``r`` of held-out rows whose intervals may fail freely (Markov allowance)."""


def check_lipschitz(
    model: Any,
    X: Any,
    y: Any,
    *,
    lipschitz: float | Sequence[float] | None = None,
    alpha: float = 0.05,
    beta: float | None = None,
    per_class: bool = True,
    free_share: float = DEFAULT_FREE_SHARE,
    certified_at: str = "model",
    bandwidth_at: float | None = None,
    contrast: bool | Sequence[bool] = True,
) -> LipschitzCheck | list[LipschitzCheck] | list[LipschitzCheck | list[LipschitzCheck]]:
    r"""Test an assumed Lipschitz constant on held-out rows.

    Rejects ``L`` when, on rows whose labels did not enter the model's kernel
    sums, certified predictions err more often than their error ceilings
    allow, or (``per_class``) a class occurs more or less often than its
    intervals allow, or (``contrast``) the labels at the two ends of ``p̂_c``
    differ by more than ``L`` allows across the distances between them. The
    probability of rejecting an ``L`` that is true (at least the real
    constant) is at most ``alpha``. See
    :mod:`nwbound.lipschitz_check` for the test and its proof.

    Not rejecting ``L`` does not certify it: **L is an assumption consistent
    with held-out data, not a certified fact**, and a small held-out set has
    little power to reject it.

    Parameters
    ----------
    model : NadarayaWatsonClassifier or DyadicClassifier
        Fitted. Its kernel sums must not contain the rows of ``X``.
    X : array-like of shape (n, n_features)
        Held-out inputs, in the units the model takes.
    y : array-like of shape (n,)
        Their labels, among ``model.classes_``.
    lipschitz : float, sequence of float or None, default=None
        The ``L`` to test, in the units of the distances the model computes
        (after its ``metric`` unless None: the default ``"auto"`` maps). None: the model's own
        assumption (its ``lipschitz``, the chosen ``lipschitz_`` with the default
        ``lipschitz="auto"``, or its ``margin`` ``γ`` as ``β = 1/γ``; a cross-fitted model
        checks each of its models at its own L, and the record names the largest). A sequence:
        several, from one pass of kernel sums.
    alpha : float, default=0.05
        Level of the test: ``P(reject a true L) ≤ alpha``, all parts included.
    beta : float or None, default=None
        The part of ``alpha`` spent on the rows whose intervals fail (Markov's
        inequality); the rest is shared by the count tests (Bonferroni).
        None: ``alpha/2``. Must satisfy ``0 < beta < alpha``.
    per_class : bool, default=True
        Also test each class's count over all rows against its intervals
        (both sides). This gives power when few rows are certified.
    free_share : float, default=0.002
        ``r`` with ``0 ≤ r < 1``: up to ``m = ⌊r·n⌋`` rows may have failed
        intervals (they may err freely). The test's intervals use
        ``δ_t = β·(m + 1)/n`` so that ``P(more than m fail) ≤ β``. Larger
        ``r``: narrower intervals but more free errors in every count; the
        default keeps ``m`` small (0 below 500 rows), which gave the most
        power on the known-p fields tried.
    certified_at : {"model", "test"}, default="model"
        Which rows the certified-errors test counts: those certified at the
        model's own ``delta`` (what its users see), or those certified by the
        test's own intervals at ``δ_t`` (fewer rows; half the interval work,
        since the model's setting is then not computed).
    bandwidth_at : float or None, default=None
        Only for a model with ``bandwidth="auto"`` (a grid of bandwidths).
        None: each ``L`` uses the bandwidths its own setting chooses (what the
        model predicts at that ``L``). A value: each query's bandwidth is
        chosen once, at ``lipschitz=bandwidth_at`` (label-free), and kept for
        every ``L`` tested, so the intervals are nested in ``L`` — what
        :func:`select_lipschitz` needs to keep ``δ`` (see
        :mod:`nwbound.lipschitz_check`). Ignored at a fixed bandwidth.
    contrast : bool, default=True
        Also run the contrast tests: for each class, the labels of the rows
        of highest and lowest ``p̂_c`` (shares 0.1 and 0.3), matched at least
        distance, against the difference that ``L`` allows across the
        matched distances. They test the Lipschitz condition directly and see
        a too-small ``L`` that the interval counts miss (intervals wrong by a
        little on a few per cent of queries). They share the level with the
        counts. Not run for a margin assumption or a cross-fitted model (no
        single space). False: the counts only. A sequence of flags (e.g.
        ``(False, True)``): one result per flag, each what that flag alone
        gives, all from **one** set of intervals (the flags change the tests
        run on the intervals and their Bonferroni split, not the intervals),
        so asking for both costs little more than one.

    Returns
    -------
    LipschitzCheck or list of LipschitzCheck
        One check, or one per value when ``lipschitz`` is a sequence. When
        ``contrast`` is a sequence: a list with one such result per flag, in
        its order.

    Raises
    ------
    TypeError
        ``model`` is not a bounded classifier.
    sklearn.exceptions.NotFittedError
        ``model`` is not fitted.
    ValueError
        ``X`` and ``y`` differ in length or are empty, ``y`` has labels the
        model never saw, ``alpha``, ``beta``, ``free_share`` or ``lipschitz``
        are out of range, or the model has no assumption and none is given.

    See Also
    --------
    select_lipschitz : the smallest ``L`` on a grid that held-out rows do not reject.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.assumptions import check_lipschitz
    >>> from nwbound.datasets import make_lipschitz_logistic
    >>> data = make_lipschitz_logistic(3000, lipschitz=0.5, n_features=1, scale="box", random_state=0)
    >>> data.lipschitz  # the true constant, in the units of X
    10.0
    >>> X_fit, y_fit, X_held, y_held = data.X[:2000], data.y[:2000], data.X[2000:], data.y[2000:]
    >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=10.0).fit(X_fit, y_fit)
    >>> check = check_lipschitz(clf, X_held, y_held)  # the model's own L
    >>> check.lipschitz, check.n_rows, check.rejected
    (10.0, 1000, False)
    >>> check_lipschitz(clf, X_held, y_held, lipschitz=0.5).rejected  # 20 times too small
    True
    >>> counts, both = check_lipschitz(clf, X_held, y_held, contrast=(False, True))  # one set of intervals
    >>> both.p_value == check_lipschitz(clf, X_held, y_held).p_value, len(both.tests) > len(counts.tests)
    (True, True)
    """
    _check_model(model)
    alpha, beta, free_share = _check_levels(alpha, beta, free_share)
    values, single = _check_values(lipschitz)
    if not isinstance(per_class, (bool, np.bool_)):
        raise ValueError(f"per_class must be True or False, got {per_class!r}.")
    flags = _check_flags(contrast, "contrast")
    families = _run_check_families(
        model, X, y, values, alpha=alpha, beta=beta, free_share=free_share, per_class=bool(per_class),
        certified_at=_check_certified_at(certified_at),
        bandwidth_at=check_positive(bandwidth_at, "bandwidth_at", allow_none=True),
        contrasts=(flags,) if isinstance(flags, bool) else flags,
    )
    results = [checks[0] if single else checks for checks in families]
    return results[0] if isinstance(flags, bool) else results


def select_lipschitz(
    model: Any,
    X: Any,
    y: Any,
    grid: Sequence[float],
    *,
    alpha: float = 0.05,
    beta: float | None = None,
    per_class: bool = True,
    free_share: float = DEFAULT_FREE_SHARE,
    certified_at: str = "model",
    bandwidth_at: float | None = None,
    contrast: bool = True,
    mapped: np.ndarray | None = None,
) -> LipschitzSelection:
    r"""The smallest ``L`` on a grid that held-out rows do not reject.

    Each grid value is tested with :func:`check_lipschitz` (all from one pass
    of kernel sums). Since the assumption at ``L`` implies it at every larger
    value, rejecting ``L`` rejects every smaller value too: the chosen value
    is the smallest grid value **above every rejected one** (so the choice is
    monotone: more rejections never lower it).

    Choosing ``L`` this way keeps the bound valid whenever the chosen value is
    at least the true constant, because at a fixed bandwidth the intervals are
    nested in ``L``. With ``bandwidth="auto"`` pass ``bandwidth_at`` (and
    predict with that bandwidth choice) to keep them nested; otherwise a union
    bound over the bandwidths the grid gives each query applies. The risk is
    a chosen value below the true constant, which a small held-out set may
    miss: the contrasts catch a constant several times too small where ``p``
    changes by much across the held-out rows, not one wrong only in a small
    region (measured figures in the user guide). The
    chosen ``L`` is an assumption consistent with held-out data, not a
    certified fact.

    Parameters
    ----------
    model : NadarayaWatsonClassifier or DyadicClassifier
        Fitted; its kernel sums must not contain the rows of ``X``.
    X : array-like of shape (n, n_features)
        Held-out inputs.
    y : array-like of shape (n,)
        Their labels.
    grid : sequence of float
        Candidate constants (> 0); sorted here, duplicates dropped.
    alpha, beta, per_class, free_share, certified_at, bandwidth_at, contrast
        As in :func:`check_lipschitz`, for each grid value. With several grid
        values at or above the true constant, the chance that one of them is
        rejected (which only makes the choice more cautious) can exceed
        ``alpha``.
    mapped : ndarray of shape (n, n_components) or None, default=None
        ``model.metric_.transform(X)`` where the caller has it (a fit's own check rows), read
        instead of mapping ``X`` again; None maps ``X`` here.

    Returns
    -------
    LipschitzSelection
        ``chosen``, ``all_rejected``, and every grid value's check.
        When every value is rejected, ``chosen`` is None, ``all_rejected`` is
        True and a ``UserWarning`` says so: there is no silent fallback.

    Raises
    ------
    ValueError, TypeError, sklearn.exceptions.NotFittedError
        As :func:`check_lipschitz`; also an empty ``grid``.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.assumptions import select_lipschitz
    >>> from nwbound.datasets import make_lipschitz_logistic
    >>> data = make_lipschitz_logistic(3000, lipschitz=0.5, n_features=1, scale="box", random_state=0)
    >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=10.0).fit(data.X[:2000], data.y[:2000])
    >>> sel = select_lipschitz(clf, data.X[2000:], data.y[2000:], [0.5, 2.0, 10.0])
    >>> [row["rejected"] for row in sel.table()], sel.chosen
    ([True, False, False], 2.0)
    """
    _check_model(model)
    alpha, beta, free_share = _check_levels(alpha, beta, free_share)
    if isinstance(grid, (str, numbers.Real)):
        raise ValueError(f"grid must be a sequence of numbers > 0, got {grid!r}.")
    values, _ = _check_values(list(grid))
    assert values is not None
    values = sorted(set(values))
    if not isinstance(per_class, (bool, np.bool_)):
        raise ValueError(f"per_class must be True or False, got {per_class!r}.")
    checks = _run_checks(
        model, X, y, values, alpha=alpha, beta=beta, free_share=free_share, per_class=bool(per_class),
        certified_at=_check_certified_at(certified_at),
        bandwidth_at=check_positive(bandwidth_at, "bandwidth_at", allow_none=True),
        contrast=_check_flag(contrast, "contrast"), mapped=_check_mapped(mapped, X),
    )
    rejected = [i for i, c in enumerate(checks) if c.rejected]
    start = rejected[-1] + 1 if rejected else 0
    all_rejected = start >= len(values)
    chosen = None if all_rejected else values[start]
    if all_rejected:
        warnings.warn(
            f"Every L on the grid (up to {values[-1]:g}) is rejected by the {checks[0].n_rows} held-out rows: "
            "no L chosen. Extend the grid upward, or reconsider the space the classifier works in.",
            UserWarning,
            stacklevel=2,
        )
    return LipschitzSelection(
        grid=tuple(values), checks=tuple(checks), chosen=chosen, all_rejected=all_rejected, alpha=alpha, beta=beta
    )
