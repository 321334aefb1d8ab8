"""The result type shared by every classifier that reports bounds."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

__all__ = ["PredictionInterval"]


def _device(xp, a):
    """``a``'s device for ``xp.arange(..., device=...)`` (None for NumPy)."""
    return None if xp is np else getattr(a, "device", None)


def _is_lazy(a: Any) -> bool:
    """Whether ``a`` is a Dask collection (the dask protocol's mark; no import of dask needed)."""
    return hasattr(a, "__dask_graph__")


@dataclass(frozen=True)
class PredictionInterval:
    """Per-query class probabilities with frequentist error bounds.

    All ``(n, C)`` arrays have their columns in ``classes_`` order. The words
    (ε, bias, sampling, trivial, vacuous, certified, error ceiling) are those of
    the user guide's glossary.

    Attributes
    ----------
    proba : ndarray of shape (n_queries, n_classes)
        Estimated class probabilities ``p̂_c(y)``.
    lower, upper : ndarray of shape (n_queries, n_classes)
        The bound: ``lower ≤ p_c(y) ≤ upper`` with probability ``≥ 1 − δ``. For
        ``bound="hoeffding"`` (and the other ``p̂ ± ε`` forms) they are
        ``clip(p̂ ∓ (bias + sampling), 0, 1)``; for ``"chernoff"`` they come from a
        test and need not be symmetric about ``p̂``.
    epsilon : ndarray of shape (n_queries, n_classes)
        Half-width of the reported interval, ``ε = max(p̂ − lower, upper − p̂)``
        (every form; 1 where ``vacuous``).
    bias, sampling : ndarray of shape (n_queries, n_classes)
        The Hoeffding account of the width: the Lipschitz drift ``β·D/κ`` and
        the sampling term on the same points, before any cap (``bias`` can
        exceed 1). For the ``p̂ ± ε`` forms the interval is
        ``p̂ ∓ (bias + sampling)``, clipped; for ``"chernoff"`` they are an
        account of where the width comes from, not parts of its ε.
    kappa : ndarray of shape (n_queries,)
        Kernel mass ``κ_n(y) = Σ w_i K((‖y − y_i‖)/λ)``.
    n_eff : ndarray of shape (n_queries,)
        Effective number of samples ``κ² / Σ (w_i K_i)²`` (0 where κ = 0).
    vacuous : ndarray of bool, shape (n_queries,)
        True where no training mass reached the query (κ = 0): ``p̂`` is the
        ``empty_neighborhood`` fallback, every interval is [0, 1] and ``ε = 1``.
        Every vacuous row is also :attr:`trivial`; a trivial row need not be
        vacuous (κ > 0, but the bound is still [0, 1] for every class).
    bandwidth : ndarray of shape (n_queries,)
        Bandwidth used for each query (constant unless ``bandwidth="auto"``;
        the cell reach for the dyadic classifier).
    outside_box : ndarray of bool, shape (n_queries,), or None
        True where the query lies outside the bounding box of the training
        inputs (extrapolation; the bound still holds but is usually wide).

    Notes
    -----
    The fields are NumPy arrays, the queries' arrays under ``array_api_dispatch``, or lazy Dask
    arrays (:mod:`nwbound.dask`). On lazy fields, :attr:`certified`, :attr:`error_upper`,
    :attr:`trivial`, :attr:`predicted_index`, :meth:`take`, :meth:`concatenate` and :meth:`as_dict`
    give lazy results and compute nothing; :meth:`compute` (or ``dask.compute(iv)``) computes all
    the fields in one pass of their graph.

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

    # Fields are read by name (the deprecated ``iv["lower"]`` below), never by position: not a
    # sequence, as before ``__getitem__`` existed.
    __iter__ = None

    def __len__(self) -> int:
        n = self.proba.shape[0]
        if n is None or n != n:  # lazy rows chosen by a lazy mask: NaN (None in the array API) until computed
            raise TypeError(
                "This lazy PredictionInterval's number of queries is not known until it is computed "
                "(its rows were selected by a lazy mask); call .compute() first."
            )
        return n

    def __getitem__(self, name: str) -> Any:
        """Deprecated: the field ``name`` (``iv["lower"]``); read the attribute (``iv.lower``).

        Through round 12, :mod:`nwbound.dask`'s ``predict_interval`` returned a dict of field name →
        Dask array; it returns a :class:`PredictionInterval` now. This access keeps such code
        working, with a ``FutureWarning``, for one release.

        Examples
        --------
        >>> import warnings
        >>> import numpy as np
        >>> from nwbound import PredictionInterval
        >>> iv = PredictionInterval.from_parts(
        ...     proba=np.array([[0.9, 0.1]]), bias=np.full((1, 2), 0.1), sampling=np.full((1, 2), 0.2),
        ...     kappa=np.array([10.0]), n_eff=np.array([8.0]), vacuous=np.array([False]),
        ...     bandwidth=np.array([1.0]))
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     lower = iv["lower"]
        >>> lower is iv.lower, caught[0].category.__name__
        (True, 'FutureWarning')
        """
        names = [f.name for f in fields(self)]
        if not isinstance(name, str):
            raise TypeError(
                f"PredictionInterval fields are attributes (iv.lower); iv[{name!r}] is not supported. "
                "To select queries, use iv.take(rows)."
            )
        if name not in names:
            raise KeyError(f"{name!r} is not a PredictionInterval field; the fields are {', '.join(names)}.")
        warnings.warn(
            f"iv[{name!r}] is deprecated and will be removed in the next release: nwbound.dask's "
            f"predict_interval returns a PredictionInterval now, not a dict. Read iv.{name} "
            "(and call iv.compute() to compute every field in one pass).",
            FutureWarning,
            stacklevel=2,
        )
        return getattr(self, name)

    def _namespace(self):
        """The array namespace of the fields: NumPy, or (``array_api_dispatch`` results) theirs."""
        if isinstance(self.proba, np.ndarray):
            return np
        from ._namespace import compat  # array_api_compat (installed or scikit-learn's vendored copy)

        return compat().array_namespace(self.proba, self.lower, self.upper)

    def _predicted_column(self, xp):
        """``(one_hot, top)``: the predicted column of each row as a boolean mask, and its index."""
        top = xp.argmax(self.proba, axis=1)
        columns = xp.arange(self.proba.shape[1], device=_device(xp, self.proba))
        return columns[None, :] == top[:, None], top

    @property
    def predicted_index(self) -> np.ndarray:
        """Column of the predicted (most probable) class of each query, shape (n,).

        In the namespace of the fields (NumPy, or the queries' under ``array_api_dispatch``), as are
        :attr:`certified`, :attr:`error_upper` and :attr:`trivial`.
        """
        return self._predicted_column(self._namespace())[1]

    @property
    def certified(self) -> np.ndarray:
        """True where the bound certifies the prediction, shape (n,).

        The predicted class's lower bound lies strictly above every other
        class's upper bound, and training mass reached the query (not
        ``vacuous``). At level ``1 − δ`` (``1 − Cδ/2`` under
        ``coverage="per_class"`` with C ≥ 3 classes; under the stated assumption)
        the predicted class is then the most probable class at that query.
        """
        xp = self._namespace()
        reached = ~(np.asarray(self.vacuous, dtype=bool) if xp is np else xp.astype(self.vacuous, xp.bool))
        if self.proba.shape[1] < 2:
            return reached
        mask, _ = self._predicted_column(xp)
        top_lower = xp.max(xp.where(mask, self.lower, -xp.inf), axis=1)
        others_upper = xp.max(xp.where(mask, -xp.inf, self.upper), axis=1)
        return (top_lower > others_upper) & reached

    @property
    def error_upper(self) -> np.ndarray:
        """Guaranteed ceiling on the probability that the predicted label is wrong, shape (n,).

        ``1 − lower`` of the predicted class: with probability ``≥ 1 − δ``,
        ``P(true label ≠ predicted | y) ≤ error_upper``.
        """
        xp = self._namespace()
        mask, _ = self._predicted_column(xp)
        return 1.0 - xp.max(xp.where(mask, self.lower, -xp.inf), axis=1)

    @property
    def trivial(self) -> np.ndarray:
        """True where the bound says nothing: every class's interval is [0, 1], shape (n,).

        Whatever the cause: it includes every :attr:`vacuous` row (κ = 0) and
        rows where training mass reached the query but the bound is still
        [0, 1] for every class.
        """
        xp = self._namespace()
        return xp.all((self.lower <= 0.0) & (self.upper >= 1.0), axis=1)

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
        >>> import dataclasses
        >>> far = dataclasses.replace(iv, outside_box=np.array([True]))
        >>> PredictionInterval.concatenate([iv, far]).outside_box.tolist()  # iv did not record it
        [False, True]
        """
        parts = list(parts)
        if not parts:
            raise ValueError("PredictionInterval.concatenate needs at least one interval, got none.")
        widths = sorted({p.proba.shape[1] for p in parts})
        if len(widths) > 1:
            raise ValueError(
                f"PredictionInterval.concatenate got intervals with {', '.join(map(str, widths))} class columns; "
                "only intervals of one model (the same classes, in the same order) can be joined."
            )
        if len(parts) == 1:
            return parts[0]
        values = {}
        for f in fields(cls):
            arrays = [getattr(p, f.name) for p in parts]
            if f.name == "outside_box" and any(a is not None for a in arrays):
                # A part that did not record it counts as inside the box (as the dask path fills it):
                # the rows that did record it keep their flags.
                arrays = [np.zeros(len(p), dtype=bool) if a is None else a for p, a in zip(parts, arrays)]
            if any(a is None for a in arrays):
                values[f.name] = None
            elif all(isinstance(a, np.ndarray) for a in arrays):
                values[f.name] = np.concatenate(arrays)
            else:  # the device path's tensors: joined where they live
                from ._namespace import array_namespace_of

                values[f.name] = array_namespace_of(*arrays).concat(arrays)
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
        >>> len(iv.take(1))  # one index: an interval of one query, not of scalars
        1
        """
        if isinstance(rows, (int, np.integer)) and not isinstance(rows, (bool, np.bool_)):
            # A scalar index would drop the query axis: (C,) arrays for (n, C) and scalars for (n,),
            # an interval every property then misreads.
            rows = np.array([rows])
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return type(self)(**{name: None if a is None else a[rows] for name, a in values.items()})

    def compute(self, **kwargs: Any) -> "PredictionInterval":
        """This interval with its lazy (Dask) fields computed, all in one pass of their graph.

        As ``xarray.Dataset.compute``: a new interval, this one unchanged. The fields of
        :mod:`nwbound.dask`'s intervals share their tasks (one per query block computes every
        field), so computing them together runs each block once; computing them one by one
        (``iv.lower.compute()``, then ``iv.upper.compute()``) would run every block again.
        ``dask.compute(iv)`` does the same (Dask traverses dataclasses), also with other
        collections in the same pass.

        Parameters
        ----------
        **kwargs
            Passed on to :func:`dask.compute`, e.g. ``scheduler="threads"``, or
            ``scheduler=client`` for a distributed client that is not the default one.

        Returns
        -------
        PredictionInterval
            With NumPy fields; ``self`` when no field is lazy (dask is then not imported).

        Examples
        --------
        >>> import numpy as np
        >>> import dask.array as da
        >>> from nwbound import PredictionInterval
        >>> iv = PredictionInterval.from_parts(
        ...     proba=np.array([[0.9, 0.1], [0.5, 0.5]]), bias=np.full((2, 2), 0.1),
        ...     sampling=np.full((2, 2), 0.2), kappa=np.array([10.0, 10.0]), n_eff=np.array([8.0, 8.0]),
        ...     vacuous=np.array([False, False]), bandwidth=np.array([1.0, 1.0]))
        >>> lazy = PredictionInterval(**{k: None if v is None else da.from_array(v, chunks=1)
        ...                              for k, v in iv.as_dict().items()})
        >>> type(lazy.certified).__name__  # a lazy property: nothing computed yet
        'Array'
        >>> done = lazy.compute(scheduler="sync")
        >>> type(done.lower).__name__, done.certified.tolist()
        ('ndarray', [True, False])
        >>> iv.compute() is iv  # NumPy fields: nothing to compute
        True
        """
        if not any(_is_lazy(getattr(self, f.name)) for f in fields(self)):
            return self
        import dask  # only reached with Dask arrays in hand

        (computed,) = dask.compute(self, **kwargs)
        return computed

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

        ``lower, upper = clip(p̂ ∓ (bias + sampling), 0, 1)`` ([0, 1] where ``vacuous``)
        and ``ε = max(p̂ − lower, upper − p̂)`` (1 where ``vacuous``).

        ``vacuous`` is one flag per query (bool, or 0/1), never a list of row indices.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import PredictionInterval
        >>> iv = PredictionInterval.from_parts(
        ...     proba=np.array([[0.9, 0.1], [0.5, 0.5]]), bias=np.zeros((2, 2)),
        ...     sampling=np.full((2, 2), 0.2), kappa=np.array([3.0, 0.0]), n_eff=np.array([3.0, 0.0]),
        ...     vacuous=np.array([0, 1]), bandwidth=np.ones(2))
        >>> iv.lower.round(2).tolist(), iv.vacuous.tolist()
        ([[0.7, 0.0], [0.0, 0.0]], [False, True])
        """
        vacuous = np.asarray(vacuous)
        if vacuous.shape != (proba.shape[0],) or not (
            vacuous.dtype == bool or np.isin(vacuous, (0, 1)).all()
        ):
            raise ValueError(
                f"`vacuous` must hold one flag (bool, or 0/1) per query, shape ({proba.shape[0]},); "
                f"got {vacuous.dtype} of shape {vacuous.shape}. Pass a boolean mask, not row indices."
            )
        vacuous = vacuous.astype(bool, copy=False)
        width = np.minimum(1.0, bias + sampling)
        width[vacuous] = 1.0
        lower = np.clip(proba - width, 0.0, 1.0)
        upper = np.clip(proba + width, 0.0, 1.0)
        epsilon = np.maximum(proba - lower, upper - proba)
        epsilon[vacuous] = 1.0
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
