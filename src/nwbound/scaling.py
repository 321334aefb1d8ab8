"""Restating the assumptions (L, γ) in the units of scaled features.

L and γ are properties of the class probabilities *in a metric*: after
``x ↦ s ⊙ (x − m)`` (per-feature scales ``s``) distances change, and so do
the constants. For any x, x′: ``‖x − x′‖ ≥ ‖s ⊙ (x − x′)‖ / max_j s_j``, so a
function L-Lipschitz in the original units is ``L·/min_j s_j``… precisely:

* Lipschitz: ``|p(x) − p(x′)| ≤ L‖x − x′‖ ≤ (L / min_j s_j)·‖x̃ − x̃′‖``;
  the restated constant is ``L / min_j s_j``. For min-max scaling
  (``s_j = 1/range_j``) that is ``L·max_j range_j`` (the notes' example:
  L = 0.15 on [−10, 10]² becomes 3.0 on [0, 1]²).
* Margin: ``‖x̃ − x̃′‖ ≥ min_j s_j·‖x − x′‖ ≥ min_j s_j·γ``.
"""

from __future__ import annotations

import numpy as np

from ._validation import check_positive

__all__ = ["feature_scales", "restate_lipschitz", "restate_margin"]


def feature_scales(scaler) -> np.ndarray:
    """Per-feature multiplicative scales ``s_j`` of a fitted scikit-learn scaler.

    Supports ``MinMaxScaler`` (``scale_``), ``StandardScaler``/``MaxAbsScaler``/
    ``RobustScaler`` (``1/scale_``), or a plain array of scales.

    Parameters
    ----------
    scaler : fitted scaler or array-like of shape (d,)
        A fitted scikit-learn scaler of the kinds above, or the scales ``s_j``
        themselves (``new = s_j·old + shift``).

    Returns
    -------
    ndarray of shape (d,)
        The scales ``s_j``, all finite and > 0.

    Raises
    ------
    TypeError
        ``scaler`` is another transformer, whose scales cannot be read.
    ValueError
        A scale is not finite or not > 0 (e.g. a constant feature).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.preprocessing import MinMaxScaler
    >>> sc = MinMaxScaler().fit(np.array([[0.0, -10.0], [4.0, 10.0]]))
    >>> feature_scales(sc).tolist()
    [0.25, 0.05]
    >>> feature_scales([2.0, 0.0])
    Traceback (most recent call last):
        ...
    ValueError: Feature scales must be finite and > 0 (a constant feature has no usable scale).
    """
    from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, RobustScaler, StandardScaler

    if isinstance(scaler, MinMaxScaler):
        scales = np.asarray(scaler.scale_, dtype=np.float64)
    elif isinstance(scaler, (StandardScaler, MaxAbsScaler, RobustScaler)):
        if getattr(scaler, "scale_", None) is None:
            scales = np.ones(scaler.n_features_in_)
        else:
            scales = 1.0 / np.asarray(scaler.scale_, dtype=np.float64)
    elif hasattr(scaler, "fit") or hasattr(scaler, "transform"):
        raise TypeError(
            f"Cannot read per-feature scales from {type(scaler).__name__}; pass the array of "
            "scales s_j (new = s_j·old + shift) instead."
        )
    else:
        scales = np.asarray(scaler, dtype=np.float64).ravel()
    if scales.size == 0 or not np.all(np.isfinite(scales)) or np.any(scales <= 0):
        raise ValueError("Feature scales must be finite and > 0 (a constant feature has no usable scale).")
    return scales


def restate_lipschitz(lipschitz: float, scaler) -> float:
    """L in the units of the scaled features: ``L / min_j s_j``.

    Parameters
    ----------
    lipschitz : float
        ``L`` in the units of the original features (> 0).
    scaler : fitted scaler or array-like of shape (d,)
        As for :func:`~nwbound.scaling.feature_scales`.

    Returns
    -------
    float
        ``L`` valid in the units of the scaled features.

    Raises
    ------
    TypeError, ValueError
        As for :func:`~nwbound.scaling.feature_scales`, or ``lipschitz`` not a number > 0.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.preprocessing import MinMaxScaler
    >>> sc = MinMaxScaler().fit(np.array([[-10.0, -10.0], [10.0, 10.0]]))
    >>> round(restate_lipschitz(0.15, sc), 6)
    3.0
    """
    return check_positive(lipschitz, "lipschitz") / float(feature_scales(scaler).min())


def restate_margin(margin: float, scaler) -> float:
    """A margin valid in the units of the scaled features: ``γ·min_j s_j``.

    Parameters
    ----------
    margin : float
        ``γ`` in the units of the original features (> 0).
    scaler : fitted scaler or array-like of shape (d,)
        As for :func:`~nwbound.scaling.feature_scales`.

    Returns
    -------
    float
        A margin that holds in the units of the scaled features.

    Raises
    ------
    TypeError, ValueError
        As for :func:`~nwbound.scaling.feature_scales`, or ``margin`` not a number > 0.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.preprocessing import MinMaxScaler
    >>> sc = MinMaxScaler().fit(np.array([[-10.0, -10.0], [10.0, 10.0]]))
    >>> round(restate_margin(2.0, sc), 6)
    0.1
    """
    return check_positive(margin, "margin") * float(feature_scales(scaler).min())
