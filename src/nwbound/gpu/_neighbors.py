"""Exact k nearest neighbours on the inputs' device: a blocked product, top-k, and a float64 re-rank.

For each block of queries:

1. ``d̃² = ‖q'‖² + ‖x'‖² − 2q'·x'`` for every training point, one product of the augmented rows of a
   :class:`~nwbound.gpu.DeviceTrainingSet` (float32 or float64, no TF32), as the statistics pass;
2. the ``k′ ≥ k`` smallest ``d̃²`` (``topk``): the candidates;
3. a certificate that the exact ``k`` nearest are among them: with ``E`` and ``η`` the per-query
   bounds of :func:`~nwbound.gpu._array_api.distance_error_bounds` (``|d̃² − d²| ≤ E`` on the rounded
   points, which are within ``η`` of the exact ones), every point outside the candidates has an
   exact distance ``≥ √(max(t − E, 0)) − η`` (``t`` the largest candidate ``d̃²``), and ``k`` candidates
   have one ``≤ √(d̃²_(k) + E) + η``; where the first is not strictly larger, ``k′`` grows (×4, up to
   every point) for those queries only;
4. the candidates' distances computed directly in float64 (``q − x``, each pair scaled by a power
   of two: nothing overflows), sorted by (distance, row index): the ``k`` nearest, ties to the lower
   row, as an exact search over the same float64 distances.

Nothing crosses to the host but one flag per growth round.
"""

from __future__ import annotations

from typing import Any

from ._array_api import (
    DeviceTrainingSet,
    _device,
    array_namespace_of,
    distance_error_bounds,
    full_precision_matmul,
)

__all__ = ["direct_distances", "exact_kneighbors"]

# Extra candidates beyond k in the first round, and the growth factor of later rounds.
_EXTRA = 32
_GROWTH = 4


def direct_distances(xp: Any, Q64: Any, P64: Any) -> Any:
    """``‖q − p‖`` in float64 for ``Q64`` (n, m) against ``P64`` (n, k, m), without overflow or underflow.

    Each pair's difference is divided by a power of two near its largest entry first (exact).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.gpu._array_api import array_namespace_of
    >>> from nwbound.gpu._neighbors import direct_distances
    >>> xp = array_namespace_of(np.zeros(1))
    >>> d = direct_distances(xp, np.array([[0.0, 0.0]]), np.array([[[3e200, 4e200], [3.0, 4.0]]]))
    >>> [f"{v:.6g}" for v in d[0]]
    ['5e+200', '5']
    """
    diff = Q64[:, None, :] - P64
    m = int(Q64.shape[1])
    if m == 0:
        return xp.zeros(tuple(P64.shape[:2]), dtype=xp.float64, device=_device(Q64))
    top = xp.max(xp.abs(diff), axis=2)
    expo = xp.clip(xp.ceil(xp.log2(xp.where(top > 0.0, top, 1.0))), -1022.0, 1023.0)
    scale = xp.pow(xp.asarray(2.0, dtype=xp.float64, device=_device(Q64)), expo)
    scaled = diff / scale[:, :, None]
    return xp.sqrt(xp.sum(scaled * scaled, axis=2)) * scale


def exact_kneighbors(Xq: Any, train: DeviceTrainingSet, X64: Any, n_neighbors: int, *,
                     working_memory: float | None = None) -> tuple[Any, Any]:
    """The exact ``n_neighbors`` nearest training rows of each query, on the queries' device (PyTorch).

    Parameters
    ----------
    Xq : tensor of shape (n_queries, n_features)
    train : DeviceTrainingSet
        The training set on ``Xq``'s device (its centred, rounded rows give the first-stage product).
    X64 : tensor of shape (n_train, n_features), float64
        The training rows as fitted, on the same device (the float64 re-rank).
    n_neighbors : int
        ``1 ≤ n_neighbors ≤ n_train``.
    working_memory : float or None, default=None
        MiB for a block's ``(rows, n_train)`` product (None: scikit-learn's ``working_memory``).

    Returns
    -------
    distances : float64 tensor of shape (n_queries, n_neighbors)
        Ascending; computed directly in float64.
    indices : int64 tensor of shape (n_queries, n_neighbors)
        Ties (equal float64 distances) to the lower row index.

    Examples
    --------
    >>> import torch
    >>> from nwbound.gpu import DeviceTrainingSet
    >>> from nwbound.gpu._neighbors import exact_kneighbors
    >>> X = torch.tensor([[0.0], [1.0], [3.0], [1.0]], dtype=torch.float64)
    >>> train = DeviceTrainingSet.build(X, torch.ones(4, 1, dtype=torch.float64))
    >>> d, i = exact_kneighbors(torch.tensor([[0.9]]), train, X, 3)
    >>> i.tolist(), [round(v, 3) for v in d[0].tolist()]
    ([[1, 3, 0]], [0.1, 0.1, 0.9])
    """
    import torch

    from .._memory import block_rows as rows_for_memory

    xp = array_namespace_of(Xq, train.centred)
    n_q, n_train = int(Xq.shape[0]), int(train.centred.shape[0])
    k = int(n_neighbors)
    if not 1 <= k <= n_train:
        raise ValueError(f"n_neighbors must be in [1, {n_train}] (the training points), got {n_neighbors!r}.")
    dev = _device(Xq)
    cdt = train.dtype
    q64 = xp.astype(Xq, xp.float64)
    qc = xp.astype(q64 - train.center, cdt)
    qc64 = xp.astype(qc, xp.float64)
    q_sq64 = xp.sum(qc64 * qc64, axis=1)
    err, eta = distance_error_bounds(xp, q_sq64, train)
    row_bytes = max(1, 12 * n_train)
    if working_memory is None and getattr(dev, "type", "") == "cuda":
        # A GPU's own budget (a quarter of its free memory, at most 4 GiB a block), not the host's
        # working_memory: fewer, larger products and top-k passes (one flag read per block).
        free = torch.cuda.mem_get_info(dev)[0]
        rows = max(1, min(n_q, min(4 << 30, free // 4) // row_bytes))
    else:
        rows = rows_for_memory(row_bytes, max(n_q, 1), working_memory)
    out_d = torch.empty((n_q, k), dtype=torch.float64, device=dev)
    out_i = torch.empty((n_q, k), dtype=torch.int64, device=dev)
    with full_precision_matmul(xp):
        for s in range(0, n_q, rows):
            e = min(s + rows, n_q)
            ones = torch.ones((e - s, 1), dtype=cdt, device=dev)
            A = torch.cat([qc[s:e] * -2.0, ones, q_sq64[s:e].to(cdt)[:, None]], 1)
            d2 = torch.clamp(A @ train.augmented.T, min=0.0)
            width = min(k + _EXTRA, n_train)
            # First round over every row of the block without indexing (no host read); the rows whose
            # candidates are not certified (rare) go through the growth rounds below.
            cand_d2, cand = torch.topk(d2, width, dim=1, largest=False, sorted=True)
            ok = _rerank(xp, cand_d2, cand, err[s:e, None], eta[s:e, None], q64[s:e], X64, k, width == n_train,
                         out_d[s:e], out_i[s:e])
            todo = torch.nonzero(~ok).squeeze(1)  # the block's one read on the host
            width = min(width * _GROWTH, n_train)
            while todo.numel():  # more candidates for the rows not certified yet
                cand_d2, cand = torch.topk(d2[todo], width, dim=1, largest=False, sorted=True)
                part_d = torch.empty((todo.shape[0], k), dtype=torch.float64, device=dev)
                part_i = torch.empty((todo.shape[0], k), dtype=torch.int64, device=dev)
                ok = _rerank(xp, cand_d2, cand, err[s:e][todo][:, None], eta[s:e][todo][:, None], q64[s:e][todo],
                             X64, k, width == n_train, part_d, part_i)
                out_d[s + todo] = part_d
                out_i[s + todo] = part_i
                todo = todo[~ok]
                width = min(width * _GROWTH, n_train)
    return out_d, out_i


def _rerank(xp: Any, cand_d2: Any, cand: Any, E: Any, eta: Any, q64: Any, X64: Any, k: int, every: bool,
            out_d: Any, out_i: Any) -> Any:
    """Every row's ``k`` nearest among its candidates (float64 distances, ties to the lower row) written
    to ``out_d``, ``out_i``; returns whether each row's candidates certainly hold its exact ``k`` nearest
    (rows where not are recomputed from more candidates by the caller)."""
    import torch

    cand_d2 = cand_d2.to(torch.float64)
    near = torch.sqrt(cand_d2[:, k - 1 : k] + E) + eta
    far = torch.sqrt(torch.clamp(cand_d2[:, -1:] - E, min=0.0)) - eta
    ok = (far > near * (1.0 + 2.0**-40)).squeeze(1) | every
    cidx = torch.sort(cand, dim=1).values  # by row index, then a stable sort by distance
    nb = X64[cidx.reshape(-1)].reshape(cidx.shape[0], cidx.shape[1], -1)
    dist, order = torch.sort(direct_distances(xp, q64, nb), dim=1, stable=True)
    out_d[...] = dist[:, :k]
    out_i[...] = torch.gather(cidx, 1, order[:, :k])
    return ok
