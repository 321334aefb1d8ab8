"""Exact k nearest neighbours on the inputs' device: a blocked product, top-k, and a float64 re-rank.

For each block of queries:

1. ``d̃² = ‖q'‖² + ‖x'‖² − 2q'·x'`` for every training point, one product of the augmented rows of a
   :class:`~nwbound.gpu.DeviceTrainingSet` (float32 or float64, no TF32), as the statistics pass;
2. the ``k′ = k + 32`` smallest keys (``topk``) of a bfloat16 copy of ``d̃²``: the candidates (two
   radix passes of 16 bits instead of four of 32, on half the bytes);
3. a certificate that the exact ``k`` nearest are among them: with ``E`` and ``η`` the per-query
   bounds of :func:`~nwbound.engine.device._array_api.distance_error_bounds` (``|d̃² − d²| ≤ E`` on the rounded
   points, which are within ``η`` of the exact ones), every point outside the candidates has an
   exact distance ``≥ √(max(t − E, 0)) − η`` and ``k`` candidates have one ``≤ √(d̃²_(k) + E) + η``
   (``d̃²_(k)`` the ``k``-th smallest float32 ``d̃²`` of the candidates, read from the product itself).
   ``t`` bounds from below the ``d̃²`` of every row outside the candidates: bfloat16 rounding is
   non-decreasing, so each such row has a key ``≥`` the largest candidate key ``v``, hence a
   ``d̃² ≥ v·(1 − 2⁻⁷)`` (within one bfloat16 step; ``v = ∞``: ``≥`` bfloat16's largest finite; below
   the smallest normal: ``≥ 0``). Where the first bound is not strictly larger, the query is not
   certified: after the last block, the queries not certified (rare) are read once, their product
   rows computed again, and ``k′`` grows (×4, up to every point, float32 ``topk`` of ``d̃²``) for
   those queries only;
4. the candidates' distances computed directly in float64 (``q − x``, each pair scaled by a power
   of two: nothing overflows), sorted by (distance, row index): the ``k`` nearest, ties to the lower
   row, as an exact search over the same float64 distances.

The bfloat16 keys only choose the candidates; the certificate (an order bound on the keys) and the
float64 re-rank decide the neighbours, so they are the exact ones whatever the keys' rounding. Nothing
crosses to the host but one read of the queries not certified per call (and one flag per growth round).

The switch ``nwbound.config_context(knn_topk=...)`` (or the ``_topk`` keyword; empty: the default above,
``"bf16+onesync"``) selects other forms of step 2 (issue 19, timed by ``benchmarks/diag_knn.py``),
``"+"``-separated:

* ``full``: the previous default (before issue 19's run 1): ``topk`` of the clamped float32 ``d̃²``
  itself, the growth rounds after each block (one read per block);
* ``noclamp``: ``topk`` of the unclamped float32 ``d̃²`` (the clamp at 0 applied to the candidates'
  values only: a non-decreasing map keeps the ``k′`` smallest, so the certificate reads the same numbers);
* ``onesync``: the rows not certified by the first round of every block read once after the last
  block (one read per call instead of one per block), their product rows computed again for the
  growth rounds;
* ``chunks=N``: ``topk(k′)`` of each of ``N`` column chunks, then ``topk(k′)`` of those ``N·k′``
  (the ``k′`` smallest of all are among each chunk's ``k′`` smallest);
* ``bf16``: the bfloat16 keys of step 2. With ``chunks=N`` the key is written into an
  ``(rows, N·w)`` buffer padded with ``+∞`` and searched as ``(rows·N, w)`` (one ``topk`` call); a row
  whose candidates hold a pad (only possible where real keys are ``+∞`` too) is not certified and
  goes to the growth rounds.

Every form but ``full`` implies ``noclamp``; the growth rounds are the same in all (float ``topk`` of
the product's rows). The certificate and the float64 re-rank are the same, so the neighbours are the
same exact ones (``tests/test_gpu_knn_variants.py``, against a brute-force float64 search); on an
H100 at the ECG shapes (87 554 × 100 training, 21 892 queries, k = 10) the default took 35.7 ms
against 49.0 ms for ``full``, with identical neighbours.
"""

from __future__ import annotations

import math
from typing import Any

from ..._config import get_config, parse_knn_topk
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
    >>> from nwbound.engine.device._array_api import array_namespace_of
    >>> from nwbound.engine.device._neighbors import direct_distances
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
                     working_memory: float | None = None, _topk: str | None = None) -> tuple[Any, Any]:
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
    _topk : str or None, default=None
        Private: the candidate search's form (see the module's docstring); None reads
        the config key ``knn_topk`` (empty: the default, ``"bf16+onesync"``; ``"full"``: the previous default).

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
    >>> from nwbound.engine.device._neighbors import exact_kneighbors
    >>> X = torch.tensor([[0.0], [1.0], [3.0], [1.0]], dtype=torch.float64)
    >>> train = DeviceTrainingSet.build(X, torch.ones(4, 1, dtype=torch.float64))
    >>> d, i = exact_kneighbors(torch.tensor([[0.9]]), train, X, 3)
    >>> i.tolist(), [round(v, 3) for v in d[0].tolist()]
    ([[1, 3, 0]], [0.1, 0.1, 0.9])
    """
    import torch

    from ..._memory import block_rows as rows_for_memory

    xp = array_namespace_of(Xq, train.centred)
    n_q, n_train = int(Xq.shape[0]), int(train.centred.shape[0])
    k = int(n_neighbors)
    if not 1 <= k <= n_train:
        raise ValueError(f"n_neighbors must be in [1, {n_train}] (the training points), got {n_neighbors!r}.")
    variant = parse_knn_topk(get_config()["knn_topk"] if _topk is None else _topk)
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
    ok_all = torch.ones((n_q,), dtype=torch.bool, device=dev)  # onesync (the default): the rows to grow
    with full_precision_matmul(xp):
        for s in range(0, n_q, rows):
            e = min(s + rows, n_q)
            ones = torch.ones((e - s, 1), dtype=cdt, device=dev)
            A = torch.cat([qc[s:e] * -2.0, ones, q_sq64[s:e].to(cdt)[:, None]], 1)
            if variant is not None:
                ok_all[s:e] = _variant_block(xp, variant, A @ train.augmented.T, err[s:e], eta[s:e], q64[s:e], X64, k,
                                             out_d[s:e], out_i[s:e])
                continue
            d2 = torch.clamp(A @ train.augmented.T, min=0.0)  # "full": the search as before issue 19
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
        if variant is not None and variant["onesync"]:  # every block's rows not certified, with one read
            todo_all = torch.nonzero(~ok_all).squeeze(1)
            for j in range(0, int(todo_all.shape[0]), rows):
                t = todo_all[j : j + rows]
                ones = torch.ones((t.shape[0], 1), dtype=cdt, device=dev)
                A = torch.cat([qc[t] * -2.0, ones, q_sq64[t].to(cdt)[:, None]], 1)
                part_d = torch.empty((t.shape[0], k), dtype=torch.float64, device=dev)
                part_i = torch.empty((t.shape[0], k), dtype=torch.int64, device=dev)
                every = torch.arange(t.shape[0], device=dev)
                _grow(xp, A @ train.augmented.T, every, err[t], eta[t], q64[t], X64, k,
                      min(min(k + _EXTRA, n_train) * _GROWTH, n_train), part_d, part_i)
                out_d[t] = part_d
                out_i[t] = part_i
    return out_d, out_i


def _rerank(xp: Any, cand_d2: Any, cand: Any, E: Any, eta: Any, q64: Any, X64: Any, k: int, every: bool,
            out_d: Any, out_i: Any) -> Any:
    """Every row's ``k`` nearest among its candidates (float64 distances, ties to the lower row) written
    to ``out_d``, ``out_i``; returns whether each row's candidates certainly hold its exact ``k`` nearest
    (rows where not are recomputed from more candidates by the caller)."""
    import torch

    cand_d2 = cand_d2.to(torch.float64)
    return _certified_rerank(xp, cand_d2[:, k - 1 : k], cand_d2[:, -1:], cand, E, eta, q64, X64, k, every,
                             out_d, out_i)


def _certified_rerank(xp: Any, kth: Any, last: Any, cand: Any, E: Any, eta: Any, q64: Any, X64: Any, k: int,
                      every: Any, out_d: Any, out_i: Any) -> Any:
    """:func:`_rerank` from ``kth`` (float64, (n, 1)): ``k`` candidates have ``d̃² ≤ kth``, and ``last``:
    every row outside the candidates has ``d̃² ≥ last`` (both ``≥ 0``)."""
    import torch

    near = torch.sqrt(kth + E) + eta
    far = torch.sqrt(torch.clamp(last - E, min=0.0)) - eta
    ok = (far > near * (1.0 + 2.0**-40)).squeeze(1) | every
    cidx = torch.sort(cand, dim=1).values  # by row index, then a stable sort by distance
    nb = X64[cidx.reshape(-1)].reshape(cidx.shape[0], cidx.shape[1], -1)
    dist, order = torch.sort(direct_distances(xp, q64, nb), dim=1, stable=True)
    out_d[...] = dist[:, :k]
    out_i[...] = torch.gather(cidx, 1, order[:, :k])
    return ok


def _chunked_topk(torch: Any, key: Any, width: int, chunks: int) -> tuple[Any, Any]:
    """The ``width`` smallest of each row of ``key`` (ascending, with their columns): ``topk`` of each of
    ``chunks`` column slices, then ``topk`` of their candidates."""
    n = int(key.shape[1])
    if chunks <= 1 or n <= width * chunks:
        return torch.topk(key, width, dim=1, largest=False, sorted=True)
    step = -(-n // chunks)
    vals, idxs = [], []
    for j0 in range(0, n, step):
        j1 = min(j0 + step, n)
        v, i = torch.topk(key[:, j0:j1], min(width, j1 - j0), dim=1, largest=False, sorted=False)
        vals.append(v)
        idxs.append(i + j0)
    v, pos = torch.topk(torch.cat(vals, 1), width, dim=1, largest=False, sorted=True)
    return v, torch.gather(torch.cat(idxs, 1), 1, pos)


def _bf16_topk(torch: Any, d2: Any, width: int, chunks: int) -> tuple[Any, Any, Any]:
    """Candidates from a bfloat16 copy of ``d2``: ``(largest key, columns, pad)``, ``pad`` True where a
    candidate is a padding column (the row must not be certified)."""
    rows, n = (int(v) for v in d2.shape)
    if chunks <= 1 or n <= width * chunks:
        key = d2.to(torch.bfloat16)
        kv, cand = torch.topk(key, width, dim=1, largest=False, sorted=True)
        return kv[:, -1], cand, None
    step = -(-n // chunks)
    buf = torch.empty((rows, chunks * step), dtype=torch.bfloat16, device=d2.device)
    buf[:, n:] = math.inf
    buf[:, :n] = d2  # the rounding copy
    w = min(width, step)
    v, i = torch.topk(buf.view(rows * chunks, step), w, dim=1, largest=False, sorted=False)
    offs = torch.arange(0, chunks * step, step, device=d2.device)
    cols = (i.view(rows, chunks, w) + offs[None, :, None]).view(rows, chunks * w)
    kv, pos = torch.topk(v.view(rows, chunks * w), width, dim=1, largest=False, sorted=True)
    cand = torch.gather(cols, 1, pos)
    pad = (cand >= n).any(1)
    return kv[:, -1], torch.clamp(cand, max=n - 1), pad


def _bf16_floor(torch: Any, v: Any) -> Any:
    """A float64 lower bound on every value whose bfloat16 rounding is ``≥ v`` (``v`` bfloat16): within
    one bfloat16 step below ``v`` (any faithful rounding, double rounding from float64 included);
    bfloat16's largest finite where ``v = ∞``; 0 where ``v`` is below the smallest normal."""
    v64 = v.to(torch.float64)
    big = float(torch.finfo(torch.bfloat16).max)
    tiny = float(torch.finfo(torch.bfloat16).tiny)
    low = torch.where(v64 >= tiny, v64 * (1.0 - 2.0**-7), 0.0)
    return torch.where(torch.isinf(v64), big, low)


def _variant_block(xp: Any, variant: dict, d2: Any, err: Any, eta: Any, q64: Any, X64: Any, k: int,
                   out_d: Any, out_i: Any) -> Any:
    """One block of :func:`exact_kneighbors` by a variant (module docstring): ``d2`` the unclamped product.
    Returns the rows certified by the first round (with ``onesync`` the others are left to the caller)."""
    import torch

    n_train = int(d2.shape[1])
    width = min(k + _EXTRA, n_train)
    if variant["bf16"]:
        top, cand, pad = _bf16_topk(torch, d2, width, variant["chunks"])
        vals = torch.gather(d2, 1, cand)  # the candidates' own d̃²
        kth = torch.sort(vals, dim=1).values[:, k - 1 : k]
        last = _bf16_floor(torch, top)[:, None]
    else:
        pad = None
        cand_d2, cand = _chunked_topk(torch, d2, width, variant["chunks"])
        kth, last = cand_d2[:, k - 1 : k], cand_d2[:, -1:]
    kth = torch.clamp(kth.to(torch.float64), min=0.0)
    last = torch.clamp(last.to(torch.float64), min=0.0)
    # With pads the chunked search ran (n_train > width): never every row.
    ok = _certified_rerank(xp, kth, last, cand, err[:, None], eta[:, None], q64, X64, k, width == n_train,
                           out_d, out_i)
    if pad is not None:
        ok = ok & ~pad
    if variant["onesync"]:
        return ok  # grown by the caller after every block (one read for all)
    todo = torch.nonzero(~ok).squeeze(1)  # the block's one read on the host
    _grow(xp, d2, todo, err, eta, q64, X64, k, min(width * _GROWTH, n_train), out_d, out_i)
    return ok


def _grow(xp: Any, d2: Any, todo: Any, err: Any, eta: Any, q64: Any, X64: Any, k: int, width: int,
          out_d: Any, out_i: Any) -> None:
    """The default's growth rounds for the rows ``todo`` of ``d2`` (unclamped): ``width`` candidates,
    ×4 until certified (or every row)."""
    import torch

    n_train = int(d2.shape[1])
    while todo.numel():  # more candidates for the rows not certified yet
        cand_d2, cand = torch.topk(d2[todo], width, dim=1, largest=False, sorted=True)
        part_d = torch.empty((todo.shape[0], k), dtype=torch.float64, device=d2.device)
        part_i = torch.empty((todo.shape[0], k), dtype=torch.int64, device=d2.device)
        ok = _rerank(xp, torch.clamp(cand_d2, min=0.0), cand, err[todo][:, None], eta[todo][:, None], q64[todo],
                     X64, k, width == n_train, part_d, part_i)
        out_d[todo] = part_d
        out_i[todo] = part_i
        todo = todo[~ok]
        width = min(width * _GROWTH, n_train)
