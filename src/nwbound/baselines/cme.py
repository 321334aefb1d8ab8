"""Conditional-mean-embedding (CME) classifier with frequentist bounds.

The baseline of Baumann & Schön (2024), "Safe reinforcement learning in
uncertain contexts", IEEE T-RO, as used by the NWC paper, implemented the way
its cost allows: one Cholesky factorisation at ``fit`` (O(n³)) and O(n²) work
per query, batched, instead of solving an n × n system for every query.
"""

from __future__ import annotations

import math
import numbers
import os
from typing import Any

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve, solve_triangular
from sklearn import get_config
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .._result import PredictionInterval
from .._validation import check_params_as_fitted

__all__ = ["CMEClassifier"]

_BYTES_PER_FLOAT = 8
_GIB = 2.0**30
# Share of the currently available RAM that ``fit`` may use by default.
_DEFAULT_MEMORY_FRACTION = 0.5


# The parameters alpha_, the Cholesky factor and noise_scale_ depend on (a change needs a refit),
# and those read when predicting.
_FIT_TIME_PARAMETERS = ("amplitude", "gamma", "regularization", "delta", "noise_constant")
_PREDICT_TIME_PARAMETERS = ("rkhs_bound", "max_memory_bytes", "working_memory")


def _available_memory_bytes() -> int | None:
    """Return the RAM available to new allocations, or None if unknown.

    Uses ``MemAvailable`` from ``/proc/meminfo`` (Linux: counts reclaimable
    page cache, unlike the free-page count), else ``os.sysconf``.
    """
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    for pages in ("SC_AVPHYS_PAGES", "SC_PHYS_PAGES"):
        try:
            return int(os.sysconf(pages)) * int(os.sysconf("SC_PAGE_SIZE"))
        except (AttributeError, OSError, ValueError):
            continue
    return None


def _project_rows_to_simplex(values: np.ndarray) -> np.ndarray:
    """Euclidean projection of each row onto the probability simplex.

    Sort-based algorithm (Held et al. 1974; Duchi et al. 2008), vectorised
    over rows. The projection is ``max(v − θ, 0)`` for a per-row shift θ, so
    it keeps the order of the entries and hence the argmax.
    """
    n_rows, n_cols = values.shape
    desc = -np.sort(-values, axis=1)
    cumsum = np.cumsum(desc, axis=1) - 1.0
    positive = desc - cumsum / np.arange(1, n_cols + 1) > 0
    # Index of the last column where the condition holds (column 0 always does).
    rho = n_cols - 1 - np.argmax(positive[:, ::-1], axis=1)
    theta = cumsum[np.arange(n_rows), rho] / (rho + 1)
    return np.maximum(values - theta[:, None], 0.0)


class CMEClassifier(ClassifierMixin, BaseEstimator):
    """Conditional-mean-embedding classifier with frequentist error bounds.

    With the Gaussian kernel ``k(x, x′) = s²·exp(−γ‖x − x′‖²)``, Gram matrix
    ``K``, one-hot labels ``Y`` (C × n) and ``A = K + nλ_r I``:

    - ``p̂(x) = Y A⁻¹ k_x`` (no sigmoid squashing),
    - ``P(x)² = s² − k_xᵀ A⁻¹ k_x`` (clipped at 0),
    - ``ε(x) = P(x)·(√B + c_g/√(nλ_r))``, the same for every class, with
      ``c_g = noise_constant·√(ln det(K + max(1, nλ_r) I) − 2 ln δ)``.

    Parameters
    ----------
    amplitude : float, default=exp(2.6)
        Kernel amplitude ``s`` (the kernel's maximum is ``s²``).
    gamma : float, default=exp(-4)
        Inverse squared length scale ``γ``; the length scale is
        ``ℓ = 1/√(2γ)`` (``exp(2)`` by default, as in the reference).
    regularization : float, default=1e-4
        Ridge regularisation ``λ_r`` (the system is ``K + nλ_r I``).
    rkhs_bound : float, default=1.0
        Assumed bound ``B`` on the RKHS norm (enters as ``√B``). Read when predicting:
        ``set_params(rkhs_bound=...)`` after ``fit`` takes effect at once; a change of
        ``amplitude``, ``gamma``, ``regularization``, ``delta`` or ``noise_constant`` after
        ``fit`` is refused until ``fit`` runs again.
    delta : float, default=0.05
        The bound holds with probability at least ``1 − δ`` (per query).
    noise_constant : float, default=0.5
        Prefactor of ``c_g``: the sub-Gaussian constant of the centred
        one-hot label noise. 0.5 is the correct constant for a centred
        Bernoulli (Hoeffding's lemma, σ² ≤ 1/4); the reference code uses
        0.25, which has the same σ error as the paper's NW bound. Pass 0.25
        to reproduce the reference.
    max_memory_bytes : int, optional
        Refuse to fit when the n × n Gram matrix / Cholesky factor would need
        more than this many bytes. Default: half of the RAM currently
        available (``/proc/meminfo`` or ``os.sysconf``); no limit where
        neither is readable.
    working_memory : float, optional
        Memory in MiB for one batch of queries at prediction time. Default:
        scikit-learn's ``working_memory`` setting (1024 MiB unless changed).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels, in the column order of every ``(n, C)`` output.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Feature names, when ``X`` had string column names.
    n_samples_fit_ : int
        Number of training samples ``n``.
    alpha_ : ndarray of shape (n_samples_fit_, n_classes)
        ``(K + nλ_r I)⁻¹ Yᵀ``, so that ``p̂(x) = k_xᵀ alpha_``.
    log_det_ : float
        ``ln det(K + max(1, nλ_r) I)``.
    noise_scale_ : float
        ``c_g``.
    epsilon_factor_ : float
        ``√B + c_g/√(nλ_r)``, so that ``ε(x) = P(x)·epsilon_factor_``.

    Notes
    -----
    The raw estimate ``p̂(x)`` is a kernel ridge regression of the one-hot
    labels: it need not lie in [0, 1] nor sum to 1. Its three views are

    - :meth:`predict_raw`: ``p̂`` itself (what the bound is about);
    - :meth:`predict_proba`: the Euclidean projection of ``p̂`` onto the
      probability simplex (rows in [0, 1] summing to 1, same argmax as
      ``p̂``, never farther from the true probability vector in ℓ²);
    - :meth:`predict_interval`: ``proba = clip(p̂, 0, 1)`` per class with
      ``lower/upper = clip(proba ∓ ε, 0, 1)``. Clipping to [0, 1] never
      moves ``p̂`` away from a true probability, so the same ε stays valid
      for the clipped value, and the cap ``ε ≤ 1`` of
      :class:`~nwbound.PredictionInterval` stays harmless.

    :meth:`predict` returns the argmax of ``p̂`` (through the projection, so
    that it always agrees with :meth:`predict_proba`).

    Costs: ``fit`` computes the Gram matrix and one Cholesky factorisation
    of ``K + nλ_r I`` (O(n²d + n³/3)); when ``nλ_r < 1`` the log-determinant
    in ``c_g`` belongs to a different matrix, ``K + I``, which costs a
    second Cholesky (cheaper than the eigendecomposition ``eigvalsh(K)``
    that would give both, by a factor of about 4) done in the same buffer,
    after which the Gram matrix is recomputed (O(n²d)). Peak memory is one
    n × n float64 array. A query costs O(nd + n²) (a batched triangular
    solve with the stored factor).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.baselines import CMEClassifier
    >>> X = np.array([[0.0], [0.5], [1.0], [3.0], [3.5], [4.0]])
    >>> y = np.array(["a", "a", "a", "b", "b", "b"])
    >>> clf = CMEClassifier(gamma=0.5, regularization=1e-2).fit(X, y)
    >>> clf.predict([[0.2], [3.8]]).tolist()
    ['a', 'b']
    >>> clf.predict_proba([[0.2], [3.8]]).round(2).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """

    def __init__(
        self,
        *,
        amplitude: float = float(np.exp(2.6)),
        gamma: float = float(1.0 / np.exp(2.0) ** 2),
        regularization: float = 1e-4,
        rkhs_bound: float = 1.0,
        delta: float = 0.05,
        noise_constant: float = 0.5,
        max_memory_bytes: int | None = None,
        working_memory: float | None = None,
    ) -> None:
        self.amplitude = amplitude
        self.gamma = gamma
        self.regularization = regularization
        self.rkhs_bound = rkhs_bound
        self.delta = delta
        self.noise_constant = noise_constant
        self.max_memory_bytes = max_memory_bytes
        self.working_memory = working_memory

    # ------------------------------------------------------------------ checks
    def _check_params(self) -> None:
        """Raise a clear error for an out-of-range hyper-parameter."""

        def real(name: str) -> float:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise TypeError(
                    f"CMEClassifier: {name} must be a real number, got "
                    f"{type(value).__name__} {value!r}."
                )
            value = float(value)
            if not math.isfinite(value):
                raise ValueError(f"CMEClassifier: {name} must be finite, got {value}.")
            return value

        for name in ("amplitude", "gamma", "regularization", "noise_constant"):
            if real(name) <= 0:
                raise ValueError(
                    f"CMEClassifier: {name} must be > 0, got {getattr(self, name)!r}."
                )
        if real("rkhs_bound") < 0:
            raise ValueError(
                f"CMEClassifier: rkhs_bound must be >= 0, got {self.rkhs_bound!r}."
            )
        if not 0.0 < real("delta") < 1.0:
            raise ValueError(
                f"CMEClassifier: delta must lie in (0, 1), got {self.delta!r}."
            )
        for name in ("max_memory_bytes", "working_memory"):
            if getattr(self, name) is not None and real(name) <= 0:
                raise ValueError(
                    f"CMEClassifier: {name} must be None or > 0, got "
                    f"{getattr(self, name)!r}."
                )

    def _check_memory(self, n_samples: int) -> None:
        """Refuse, before allocating, a Gram matrix that would not fit."""
        needed = _BYTES_PER_FLOAT * n_samples * n_samples
        limit = self.max_memory_bytes
        source = "max_memory_bytes"
        if limit is None:
            available = _available_memory_bytes()
            if available is None:
                return
            limit = _DEFAULT_MEMORY_FRACTION * available
            source = f"half of the available RAM ({available / _GIB:.2f} GiB)"
        if needed > limit:
            n_max = int(math.isqrt(int(limit // _BYTES_PER_FLOAT)))
            raise ValueError(
                f"CMEClassifier.fit needs about {needed / _GIB:.3g} GiB for the "
                f"{n_samples} x {n_samples} Gram matrix / Cholesky factor, more "
                f"than the limit of {limit / _GIB:.3g} GiB ({source}). Subsample "
                f"the training set (at most about {n_max} samples fit, e.g. a "
                "stratified subset) or raise max_memory_bytes."
            )

    # ------------------------------------------------------------------ kernel
    def _kernel(
        self, Xc: np.ndarray, sq_norms: np.ndarray, out: np.ndarray | None = None
    ) -> np.ndarray:
        """Kernel matrix between centred queries ``Xc`` and the training set.

        ``‖a − b‖² = ‖a‖² + ‖b‖² − 2a·b`` through one matrix product, all in
        place; centring by the training mean (done by the caller) avoids
        the cancellation of that expansion for data far from the origin.
        """
        train = self._X_centered
        out = np.matmul(Xc, train.T, out=out)
        out *= -2.0
        out += sq_norms[:, None]
        out += self._train_sq_norms[None, :]
        np.maximum(out, 0.0, out=out)
        out *= -float(self.gamma)
        np.exp(out, out=out)
        out *= float(self.amplitude) ** 2
        return out

    def _gram(self, out: np.ndarray | None = None) -> np.ndarray:
        """Training Gram matrix ``K`` (exactly ``s²`` on the diagonal)."""
        gram = self._kernel(self._X_centered, self._train_sq_norms, out=out)
        np.fill_diagonal(gram, float(self.amplitude) ** 2)
        return gram

    def _cholesky(self, matrix: np.ndarray, what: str) -> tuple[np.ndarray, float]:
        """In-place lower Cholesky factor of a symmetric C-ordered matrix.

        ``matrix.T`` is the same symmetric matrix in Fortran order, which
        LAPACK factorises without a copy. Returns ``(factor, log det)``.
        """
        try:
            factor, _ = cho_factor(
                matrix.T, lower=True, overwrite_a=True, check_finite=False
            )
        except LinAlgError as exc:
            raise ValueError(
                f"CMEClassifier.fit: {what} is not numerically positive definite "
                f"({exc}); increase regularization (now {self.regularization!r}) "
                "or reduce amplitude."
            ) from None
        diag = np.diagonal(factor)
        if not np.all(np.isfinite(diag)):
            raise ValueError(
                f"CMEClassifier.fit: the Cholesky factor of {what} is not finite; "
                "check the kernel parameters (amplitude, gamma)."
            )
        return factor, 2.0 * float(np.sum(np.log(diag)))

    # ------------------------------------------------------------------ fit
    def fit(self, X: Any, y: Any) -> "CMEClassifier":
        """Fit the embedding: Gram matrix, Cholesky factor and ``alpha_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs (finite, dense).
        y : array-like of shape (n_samples,)
            Class labels; at least two distinct classes.

        Returns
        -------
        self : CMEClassifier
            The fitted estimator.

        Raises
        ------
        ValueError
            For bad input or parameters, or when the Gram matrix would need
            more memory than ``max_memory_bytes``.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.baselines import CMEClassifier
        >>> X = np.array([[0.0], [0.5], [1.0], [3.0], [3.5], [4.0]])
        >>> y = np.array([0, 0, 0, 1, 1, 1])
        >>> clf = CMEClassifier(gamma=0.5, regularization=1e-2).fit(X, y)
        >>> clf.n_samples_fit_, clf.alpha_.shape, clf.classes_.tolist()
        (6, (6, 2), [0, 1])
        >>> CMEClassifier().fit(X, np.zeros(6))
        Traceback (most recent call last):
            ...
        ValueError: CMEClassifier needs samples of at least 2 classes in y; got 1 class (0.0).
        """
        self._check_params()
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=False)
        check_classification_targets(y)
        classes, y_index = np.unique(y, return_inverse=True)
        if classes.shape[0] < 2:
            raise ValueError(
                "CMEClassifier needs samples of at least 2 classes in y; got 1 "
                f"class ({classes[0]})."
            )
        n_samples = X.shape[0]
        self._check_memory(n_samples)

        self._center = X.mean(axis=0)
        self._X_centered = X - self._center
        self._train_sq_norms = np.einsum("ij,ij->i", self._X_centered, self._X_centered)
        self._box = (X.min(axis=0), X.max(axis=0))

        n_reg = n_samples * float(self.regularization)
        diag = np.arange(n_samples)
        gram = np.empty((n_samples, n_samples))
        self._gram(out=gram)
        if n_reg < 1.0:
            # c_g needs ln det(K + I), another matrix than the one we solve with:
            # factorise it in the same buffer, then rebuild K there.
            gram[diag, diag] += 1.0
            _, log_det_bound = self._cholesky(gram, "K + I")
            self._gram(out=gram)
        gram[diag, diag] += n_reg
        factor, log_det_reg = self._cholesky(gram, "K + n*regularization*I")
        if n_reg >= 1.0:
            log_det_bound = log_det_reg

        one_hot = np.zeros((n_samples, classes.shape[0]))
        one_hot[diag, y_index] = 1.0
        # Public fitted attributes only once the factorisation has succeeded.
        self.classes_ = classes
        self.n_samples_fit_ = n_samples
        self.alpha_ = cho_solve((factor, True), one_hot, check_finite=False)
        self._chol = factor
        self.log_det_ = log_det_bound
        radicand = log_det_bound - 2.0 * math.log(float(self.delta))
        self.noise_scale_ = float(self.noise_constant) * math.sqrt(max(radicand, 0.0))
        # alpha_, the factor and noise_scale_ hold for these values only (set_params of one: refit);
        # rkhs_bound B is read when predicting.
        self._fit_params = {name: getattr(self, name) for name in _FIT_TIME_PARAMETERS}
        return self

    @property
    def epsilon_factor_(self) -> float:
        """``√B + c_g/√(nλ_r)`` at the current ``rkhs_bound`` B (see the class docstring)."""
        check_is_fitted(self)
        n_reg = self.n_samples_fit_ * float(self.regularization)
        return math.sqrt(float(self.rkhs_bound)) + self.noise_scale_ / math.sqrt(n_reg)

    # ------------------------------------------------------------------ predict
    def _chunk_rows(self, n_queries: int) -> int:
        """Queries per batch so that a batch's n-wide arrays fit working_memory."""
        working_memory = self.working_memory
        if working_memory is None:
            working_memory = get_config()["working_memory"]
        row_bytes = 2 * _BYTES_PER_FLOAT * self.n_samples_fit_
        rows = int(float(working_memory) * 2**20 // row_bytes)
        return max(1, min(rows, n_queries))

    def _raw(
        self, X: Any, *, with_variance: bool
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, np.ndarray]:
        """Batched ``p̂``, optionally ``P²`` and ``κ = Σ_i k(x, x_i)``, and X."""
        check_is_fitted(self)
        check_params_as_fitted(self, getattr(self, "_fit_params", None), live=_PREDICT_TIME_PARAMETERS)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        n_queries = X.shape[0]
        raw = np.empty((n_queries, self.classes_.shape[0]))
        p_sq = np.empty(n_queries) if with_variance else None
        kappa = np.empty(n_queries) if with_variance else None
        step = self._chunk_rows(n_queries)
        amp_sq = float(self.amplitude) ** 2
        for start in range(0, n_queries, step):  # batches of queries, not single ones
            stop = min(start + step, n_queries)
            Xc = X[start:stop] - self._center
            k_q = self._kernel(Xc, np.einsum("ij,ij->i", Xc, Xc))
            raw[start:stop] = k_q @ self.alpha_
            if with_variance:
                kappa[start:stop] = k_q.sum(axis=1)
                # V = L⁻¹ k_x, so k_xᵀ A⁻¹ k_x = ‖V‖²; k_q.T is F-ordered: no copy.
                v = solve_triangular(
                    self._chol, k_q.T, lower=True, overwrite_b=True, check_finite=False
                )
                p_sq[start:stop] = amp_sq - np.einsum("ij,ij->j", v, v)
        if with_variance:
            np.maximum(p_sq, 0.0, out=p_sq)
        return raw, p_sq, kappa, X

    def predict_raw(self, X: Any) -> np.ndarray:
        """Return the raw embedding estimate ``p̂(x) = Y (K + nλ_r I)⁻¹ k_x``.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Query inputs.

        Returns
        -------
        ndarray of shape (n_queries, n_classes)
            ``p̂``, columns in ``classes_`` order. Not clipped: entries may
            fall outside [0, 1] and rows need not sum to 1.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.baselines import CMEClassifier
        >>> X = np.array([[0.0], [0.5], [1.0], [3.0], [3.5], [4.0]])
        >>> y = np.array([0, 0, 0, 1, 1, 1])
        >>> clf = CMEClassifier(gamma=0.5, regularization=1e-2).fit(X, y)
        >>> raw = clf.predict_raw([[0.2], [3.8]])
        >>> raw.shape, raw.argmax(axis=1).tolist()
        ((2, 2), [0, 1])
        """
        return self._raw(X, with_variance=False)[0]

    def predict_proba(self, X: Any) -> np.ndarray:
        """Return ``p̂`` projected onto the probability simplex.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Query inputs.

        Returns
        -------
        ndarray of shape (n_queries, n_classes)
            Rows in [0, 1] summing to 1, with the same argmax as
            :meth:`predict_raw`. The bounds of :meth:`predict_interval` are
            about ``p̂`` per class, not about this projection.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.baselines import CMEClassifier
        >>> X = np.array([[0.0], [0.5], [1.0], [3.0], [3.5], [4.0]])
        >>> y = np.array([0, 0, 0, 1, 1, 1])
        >>> clf = CMEClassifier(gamma=0.5, regularization=1e-2).fit(X, y)
        >>> proba = clf.predict_proba([[0.2], [3.8]])
        >>> proba.sum(axis=1).round(6).tolist(), bool(proba.min() >= 0.0)
        ([1.0, 1.0], True)
        """
        return _project_rows_to_simplex(self.predict_raw(X))

    def predict(self, X: Any) -> np.ndarray:
        """Return the class with the largest ``p̂``.

        Computed as the argmax of :meth:`predict_proba`, which has the same
        argmax as ``p̂`` except where the top entries of ``p̂`` differ by less
        than the rounding of the projection (far from the data, where
        ``p̂ ≈ 0`` for every class); there the first such class wins, so that
        ``predict`` always agrees with ``predict_proba``.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Query inputs.

        Returns
        -------
        ndarray of shape (n_queries,)
            Predicted labels (from ``classes_``).

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.baselines import CMEClassifier
        >>> X = np.array([[0.0], [0.5], [1.0], [3.0], [3.5], [4.0]])
        >>> y = np.array([0, 0, 0, 1, 1, 1])
        >>> clf = CMEClassifier(gamma=0.5, regularization=1e-2).fit(X, y)
        >>> clf.predict([[0.2], [2.4], [3.8]]).tolist()
        [0, 1, 1]
        """
        proba = self.predict_proba(X)  # checks fitted before classes_ is read
        return self.classes_[np.argmax(proba, axis=1)]

    def predict_interval(self, X: Any) -> PredictionInterval:
        """Return ``p̂`` with the CME error bound ``ε(x)`` for every class.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Query inputs.

        Returns
        -------
        PredictionInterval
            ``proba = clip(p̂, 0, 1)`` (per class, not renormalised);
            ``bias = P(x)·√B`` and ``sampling = P(x)·c_g/√(nλ_r)``, the same
            for every class; ``lower/upper = clip(proba ∓ min(1, bias + sampling), 0, 1)``
            and ``epsilon`` the half-width ``max(proba − lower, upper − proba)``. The NW-specific fields are
            filled with their nearest CME analogues: ``kappa = Σ_i k(x, x_i)``,
            ``n_eff = n`` (every training point enters the estimate),
            ``vacuous`` all False (there is no empty-mass case; far from the
            data ``ε`` grows to ``s·epsilon_factor_`` instead) and
            ``bandwidth`` the kernel length scale ``1/√(2γ)``;
            ``outside_box`` marks queries outside the training inputs'
            bounding box.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.baselines import CMEClassifier
        >>> X = np.array([[0.0], [0.5], [1.0], [3.0], [3.5], [4.0]])
        >>> y = np.array([0, 0, 0, 1, 1, 1])
        >>> clf = CMEClassifier(gamma=0.5, regularization=1e-2).fit(X, y)
        >>> iv = clf.predict_interval([[0.2], [9.0]])
        >>> iv.epsilon.shape, iv.outside_box.tolist(), iv.vacuous.tolist()
        ((2, 2), [False, True], [False, False])
        >>> bool(np.all(iv.bias[:, 0] == iv.bias[:, 1]))  # the same ε for every class
        True
        """
        raw, p_sq, kappa, X = self._raw(X, with_variance=True)
        p_scale = np.sqrt(p_sq)[:, None]
        n_queries = raw.shape[0]
        n_reg = self.n_samples_fit_ * float(self.regularization)
        # The same ε for every class: broadcast, then copy (from_parts writes to it).
        bias = np.broadcast_to(p_scale * math.sqrt(float(self.rkhs_bound)), raw.shape).copy()
        sampling = np.broadcast_to(
            p_scale * (self.noise_scale_ / math.sqrt(n_reg)), raw.shape
        ).copy()
        return PredictionInterval.from_parts(
            proba=np.clip(raw, 0.0, 1.0),
            bias=bias,
            sampling=sampling,
            kappa=kappa,
            n_eff=np.full(n_queries, float(self.n_samples_fit_)),
            vacuous=np.zeros(n_queries, dtype=bool),
            bandwidth=np.full(n_queries, 1.0 / math.sqrt(2.0 * float(self.gamma))),
            outside_box=np.any((X < self._box[0]) | (X > self._box[1]), axis=1),
        )
