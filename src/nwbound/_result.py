"""The result type shared by every classifier that reports bounds."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

__all__ = ["PredictionInterval"]


@dataclass(frozen=True)
class PredictionInterval:
    """Per-query class probabilities with frequentist error bounds.

    All ``(n, C)`` arrays have their columns in ``classes_`` order.

    Attributes
    ----------
    proba : ndarray of shape (n_queries, n_classes)
        Estimated class probabilities ``p̂_c(y)``.
    lower, upper : ndarray of shape (n_queries, n_classes)
        ``clip(p̂ ∓ ε, 0, 1)``.
    epsilon : ndarray of shape (n_queries, n_classes)
        Half-width ``ε = bias + sampling``, capped at 1.
    bias, sampling : ndarray of shape (n_queries, n_classes)
        The two parts of ``ε`` before the cap (for ``bound="chernoff"``: the
        two parts of the Hoeffding bound on the same points — the Lipschitz
        drift and the sampling term — as an account of where the width comes from).
    kappa : ndarray of shape (n_queries,)
        Kernel mass ``κ_n(y) = Σ w_i K((‖y − y_i‖)/λ)``.
    n_eff : ndarray of shape (n_queries,)
        Effective number of samples ``κ² / Σ (w_i K_i)²`` (0 where κ = 0).
    vacuous : ndarray of bool, shape (n_queries,)
        True where no training mass reached the query (κ = 0): ``ε = 1``.
        (A bound can also be *trivial* — every interval [0, 1] — with κ > 0;
        see :attr:`trivial`.)
    bandwidth : ndarray of shape (n_queries,)
        Bandwidth used for each query (constant unless ``bandwidth="auto"``;
        the cell reach for the dyadic classifier).
    outside_box : ndarray of bool, shape (n_queries,), or None
        True where the query lies outside the bounding box of the training
        inputs (extrapolation; the bound still holds but is usually wide).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import PredictionInterval
    >>> iv = PredictionInterval.from_parts(
    ...     proba=np.array([[0.9, 0.1], [0.5, 0.5]]), bias=np.full((2, 2), 0.1),
    ...     sampling=np.full((2, 2), 0.2), kappa=np.array([10.0, 10.0]), n_eff=np.array([8.0, 8.0]),
    ...     vacuous=np.array([False, False]), bandwidth=np.array([1.0, 1.0]))
    >>> iv.certified
    array([ True, False])
    >>> iv.error_upper.round(2)
    array([0.4, 0.8])
    """

    proba: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    epsilon: np.ndarray
    bias: np.ndarray
    sampling: np.ndarray
    kappa: np.ndarray
    n_eff: np.ndarray
    vacuous: np.ndarray
    bandwidth: np.ndarray
    outside_box: np.ndarray | None = None

    def __len__(self) -> int:
        return self.proba.shape[0]

    @property
    def predicted_index(self) -> np.ndarray:
        """Column of the predicted (most probable) class of each query, shape (n,)."""
        return np.argmax(self.proba, axis=1)

    @property
    def certified(self) -> np.ndarray:
        """True where the bound certifies the prediction, shape (n,).

        The predicted class's lower bound lies strictly above every other
        class's upper bound, and training mass reached the query (not
        ``vacuous``). At level ``1 − δ`` (``1 − Cδ/2`` under
        ``coverage="per_class"`` with C ≥ 3 classes; under the stated assumption)
        the predicted class is then the most probable class at that query.
        """
        n, n_classes = self.proba.shape
        if n_classes < 2:
            return ~np.asarray(self.vacuous, dtype=bool)
        top = self.predicted_index
        rows = np.arange(n)
        others = self.upper.copy()
        others[rows, top] = -np.inf
        return (self.lower[rows, top] > others.max(axis=1)) & ~np.asarray(self.vacuous, dtype=bool)

    @property
    def error_upper(self) -> np.ndarray:
        """Guaranteed ceiling on the probability that the predicted label is wrong, shape (n,).

        ``1 − lower`` of the predicted class: with probability ``≥ 1 − δ``,
        ``P(true label ≠ predicted | y) ≤ error_upper``.
        """
        return 1.0 - self.lower[np.arange(self.proba.shape[0]), self.predicted_index]

    @property
    def trivial(self) -> np.ndarray:
        """True where the bound says nothing: every class's interval is [0, 1], shape (n,)."""
        return np.all((self.lower <= 0.0) & (self.upper >= 1.0), axis=1)

    @classmethod
    def concatenate(cls, parts: "list[PredictionInterval]") -> "PredictionInterval":
        """The intervals of consecutive blocks of queries, as one.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import PredictionInterval
        >>> iv = PredictionInterval.from_parts(
        ...     proba=np.array([[0.9, 0.1]]), bias=np.full((1, 2), 0.1), sampling=np.full((1, 2), 0.2),
        ...     kappa=np.array([10.0]), n_eff=np.array([8.0]), vacuous=np.array([False]),
        ...     bandwidth=np.array([1.0]))
        >>> len(PredictionInterval.concatenate([iv, iv]))
        2
        """
        if len(parts) == 1:
            return parts[0]
        values = {}
        for f in fields(cls):
            arrays = [getattr(p, f.name) for p in parts]
            values[f.name] = None if any(a is None for a in arrays) else np.concatenate(arrays)
        return cls(**values)

    def take(self, rows: np.ndarray) -> "PredictionInterval":
        """The intervals of the queries ``rows`` (indices or a boolean mask), in that order.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import PredictionInterval
        >>> iv = PredictionInterval.from_parts(
        ...     proba=np.array([[0.9, 0.1], [0.2, 0.8]]), bias=np.full((2, 2), 0.1),
        ...     sampling=np.full((2, 2), 0.2), kappa=np.array([10.0, 5.0]), n_eff=np.array([8.0, 4.0]),
        ...     vacuous=np.array([False, False]), bandwidth=np.array([1.0, 2.0]))
        >>> iv.take(np.array([1, 0])).kappa.tolist()
        [5.0, 10.0]
        """
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return type(self)(**{name: None if a is None else a[rows] for name, a in values.items()})

    def as_dict(self) -> dict[str, np.ndarray]:
        """Return the arrays as a plain ``dict`` (e.g. for ``np.savez``)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_parts(
        cls,
        proba: np.ndarray,
        bias: np.ndarray,
        sampling: np.ndarray,
        kappa: np.ndarray,
        n_eff: np.ndarray,
        vacuous: np.ndarray,
        bandwidth: np.ndarray,
        outside_box: np.ndarray | None = None,
    ) -> "PredictionInterval":
        """Assemble an interval from ``p̂`` and the two parts of ``ε``.

        ``ε = min(1, bias + sampling)`` and is set to 1 where ``vacuous``.
        """
        epsilon = np.minimum(1.0, bias + sampling)
        epsilon[vacuous] = 1.0
        lower = np.clip(proba - epsilon, 0.0, 1.0)
        upper = np.clip(proba + epsilon, 0.0, 1.0)
        return cls(
            proba=proba,
            lower=lower,
            upper=upper,
            epsilon=epsilon,
            bias=bias,
            sampling=sampling,
            kappa=kappa,
            n_eff=n_eff,
            vacuous=vacuous,
            bandwidth=bandwidth,
            outside_box=outside_box,
        )
