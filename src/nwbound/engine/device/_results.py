"""The device route's intervals where they live: PyTorch results, their usefulness report and
certificates computed there, and their one packed copy to the host.

:func:`intervals_from_limits` (the intervals of every setting from the device bounds, with the call's
one read and the fallback rows), :func:`delivered` (results where the queries live),
:class:`DeviceIntervals` (what :func:`~._backend.intervals_on_device` returns for results that stay
on the device), :func:`usefulness_parts` / :func:`usefulness_on_device` (the numbers of
:func:`nwbound.diagnostics.bound_usefulness` without a read), :func:`device_certificates` and
:func:`interval_on_host`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable

import numpy as np

from ..._result import PredictionInterval
from ..._namespace import compat, to_host

__all__ = ["DeviceIntervals", "delivered", "device_certificates", "interval_on_host", "intervals_from_limits",
           "usefulness_on_device", "usefulness_parts"]


class DeviceIntervals(dict):
    """:func:`intervals_on_device`'s tensor results (setting name to interval, a plain ``dict``), with
    ``usefulness``: the numbers :func:`usefulness_on_device` reads for the setting ``None``, read
    with the call's one packed copy (None where not computed).

    Examples
    --------
    >>> from nwbound.engine.device._results import DeviceIntervals
    >>> DeviceIntervals({None: 1}).usefulness is None
    True
    """

    usefulness: tuple | None = None


def intervals_from_limits(limits: dict, specs: dict, *, kappa_unit: float, bandwidth: float, outside_box: Any,
                          fallback: Callable[[np.ndarray], np.ndarray], target: Any) -> dict:
    """Every setting's :class:`~nwbound.PredictionInterval` from its device limits
    (:func:`nwbound.bounds._chernoff_device.device_limits`, one dict per setting of ``specs``), with one
    read: the number of rows without mass and, for results that stay on the device (``target``, a
    PyTorch device, or None: NumPy results), the numbers of the setting ``None``'s usefulness report
    (kept in :class:`DeviceIntervals`). Rows without mass take ``fallback``'s rows (the estimator's
    ``empty_neighborhood`` rule, which may raise); ``kappa_unit`` takes κ back to the input's units.

    Examples
    --------
    >>> import numpy as np
    >>> import torch
    >>> from nwbound.engine.device._results import intervals_from_limits
    >>> one = torch.ones(1, 2, dtype=torch.float64) / 2
    >>> lim = dict(proba=one, lower=one * 0, upper=one * 2, epsilon=one, bias=one, sampling=one,
    ...            kappa=torch.ones(1, dtype=torch.float64), n_eff=torch.ones(1, dtype=torch.float64),
    ...            vacuous=torch.zeros(1, dtype=torch.bool))
    >>> from nwbound.bounds import BoundSpec
    >>> out = intervals_from_limits({None: lim}, {None: BoundSpec(form="hoeffding", beta=0.0, delta_prime=0.05)},
    ...                             kappa_unit=1.0, bandwidth=0.5, outside_box=torch.zeros(1, dtype=torch.bool),
    ...                             fallback=lambda v: np.full((int(v.sum()), 2), 0.5), target=None)
    >>> out[None].upper.tolist(), out[None].bandwidth.tolist()
    ([[1.0, 1.0]], [0.5])
    """
    import torch

    first = next(iter(limits.values()))
    vacuous = first["vacuous"]
    proba = first["proba"]  # S/κ; the fallback rows (κ = 0) are set after the read below
    n_q = int(proba.shape[0])
    kappa = first["kappa"] * kappa_unit  # back to the input's units (inf where not representable, as the host)
    common = dict(kappa=kappa, n_eff=first["n_eff"], vacuous=vacuous,
                  bandwidth=torch.full((n_q,), bandwidth, dtype=torch.float64, device=proba.device),
                  outside_box=outside_box)
    out = {}
    for name, lim in limits.items():
        lower, upper = lim["lower"], lim["upper"]
        epsilon = lim["epsilon"]
        if specs[name].is_chernoff:  # ε from p̂ where κ > 0 (the fallback rows are [0, 1] with ε = 1)
            epsilon = torch.where(vacuous[:, None], 1.0, torch.maximum(proba - lower, upper - proba))
        fields = dict(proba=proba, lower=lower, upper=upper, epsilon=epsilon, bias=lim["bias"],
                      sampling=lim["sampling"], **common)
        out[name] = PredictionInterval(**{k: v.contiguous() for k, v in fields.items()})
    # The call's one read: the number of rows without mass and, for results that stay on the device
    # and the estimator's own setting (None, the one predict_interval warns about), the numbers of its
    # usefulness report. Neither depends on the fallback rows' p̂ (they are vacuous: [0, 1], ε = 1,
    # never certified, no bias share).
    summary = target is not None and None in out and n_q > 0
    packed = [vacuous.sum().to(torch.float64)[None]] + ([usefulness_parts(out[None])] if summary else [])
    read = torch.cat(packed).tolist()
    n_vacuous = int(read[0])
    if n_vacuous:  # the rule (and its error) is the estimator's
        filled = _with_fallback(proba, vacuous, n_vacuous, fallback)
        out = {name: dataclasses.replace(iv, proba=filled) for name, iv in out.items()}
    if target is None:  # NumPy, or another array-API library: its own namespace via the estimator's restore
        return {name: _interval_to_host(iv) for name, iv in out.items()}
    result = DeviceIntervals({name: dataclasses.replace(iv, **{f.name: getattr(iv, f.name).to(target)
                                                               for f in dataclasses.fields(iv)})
                              for name, iv in out.items()})
    result.usefulness = tuple(read[1:]) if summary else None
    return result


def _with_fallback(proba: Any, vacuous: Any, n_vacuous: int, fallback: Callable[[np.ndarray], np.ndarray]) -> Any:
    """``proba`` with ``fallback``'s rows where ``vacuous``: the estimator's rule gives one row to every
    vacuous query (the prior, or uniform) or raises with their count, so it is asked with the count
    alone; a rule whose rows differ gets the rows themselves (a second read)."""
    import torch

    n = int(proba.shape[0])
    stand_in = np.zeros(n, dtype=bool)
    stand_in[:n_vacuous] = True
    rows = np.asarray(fallback(stand_in), dtype=np.float64)
    if rows.shape == (n_vacuous, proba.shape[1]) and np.all(rows == rows[:1]):
        # The row filled on the device (a copy from the host would wait for the device's queue).
        row = torch.stack([torch.full((), float(v), dtype=torch.float64, device=proba.device) for v in rows[0]])
        return torch.where(vacuous[:, None], row, proba)
    vac_host = to_host(vacuous)
    where = torch.as_tensor(np.flatnonzero(vac_host), device=proba.device)
    filled = proba.clone()
    filled[where] = torch.as_tensor(fallback(vac_host), dtype=torch.float64, device=proba.device)
    return filled


def _masked_median(torch: Any, values: Any, keep: Any) -> Any:
    """``np.median(values[keep])`` where ``values`` live, without a read: NaN where nothing is kept or
    a kept value is NaN; with an even count the mean ``(a + b)/2`` of the middle two, as NumPy's.
    Along the last axis: stacked rows of ``values`` and ``keep`` give one median each (one sort)."""
    count = keep.sum(-1)
    ordered = torch.sort(torch.where(keep, values, math.inf), dim=-1).values  # kept values first
    middle = torch.stack([torch.clamp((count - 1) // 2, min=0), count // 2], -1)
    # gather, not ordered[lo]: a 0-d index tensor is read on the host (ATen selects with its item).
    a, b = torch.gather(ordered, -1, middle).unbind(-1)
    mid = torch.where(count % 2 == 1, a, (a + b) / 2.0)
    bad = (count == 0) | (keep & torch.isnan(values)).any(-1)
    return torch.where(bad, math.nan, mid)


def usefulness_parts(interval: PredictionInterval) -> Any:
    """The numbers of :func:`nwbound.diagnostics.bound_usefulness` for a tensor interval, computed where
    it lives (nothing read): a float64 tensor ``[trivial, vacuous, certified]`` (counts), then the
    median and mean bias share, the median factor for half bias and the median ε (the same rules).

    Examples
    --------
    >>> import torch
    >>> from nwbound import PredictionInterval
    >>> from nwbound.engine.device._results import usefulness_parts
    >>> p = torch.tensor([[0.5, 0.5]], dtype=torch.float64)
    >>> iv = PredictionInterval(proba=p, lower=0 * p, upper=1 + 0 * p, epsilon=p, bias=p, sampling=p,
    ...                         kappa=p[:, 0], n_eff=p[:, 0], vacuous=torch.tensor([False]), bandwidth=p[:, 0])
    >>> usefulness_parts(iv).tolist()
    [1.0, 0.0, 0.0, 0.5, 0.5, 1.0, 0.5]
    """
    import torch

    f64 = torch.float64
    vac = interval.vacuous.to(torch.bool)
    live = ~vac
    certified, _ = device_certificates(interval)
    trivial = torch.all((interval.lower <= 0.0) & (interval.upper >= 1.0), dim=1)
    top = torch.argmax(interval.proba, dim=1)[:, None]  # the first of the largest, as np.argmax
    eps, bias, samp = (torch.gather(getattr(interval, k).to(f64), 1, top)[:, 0]
                       for k in ("epsilon", "bias", "sampling"))
    total = bias + samp
    share = bias / total
    has = live & (total > 0) & torch.isfinite(share)
    factor = samp / bias  # β' with β'·b = s (bias share 1/2), as a factor of the current β
    fin = live & (bias > 0) & torch.isfinite(factor)
    mean_share = torch.where(has, share, 0.0).sum() / has.sum()  # NaN where none
    # the three medians in one sort: the bias share, the factor for half bias, ε
    share_m, factor_m, eps_m = _masked_median(
        torch, torch.stack([share.to(f64), factor.to(f64), torch.where(vac, 1.0, eps)]),
        torch.stack([has, fin, torch.ones_like(vac)])).unbind()
    return torch.stack([trivial.sum().to(f64), vac.sum().to(f64), certified.sum().to(f64),
                        share_m, mean_share.to(f64), factor_m, eps_m])


def usefulness_on_device(interval: PredictionInterval, parts: Any = None, *, beta: float | None = None,
                         trivial_threshold: float = 0.5, context: Any = None) -> Any:
    """:func:`nwbound.diagnostics.bound_usefulness` of a tensor interval from :func:`usefulness_parts`
    (``parts``: those numbers already read, as :func:`intervals_on_device` does; else one read here).

    The same report, to the mean bias share's last bits (a sum in another order); None for an
    interval without rows (the host's report then raises its error).

    Examples
    --------
    >>> import torch
    >>> from nwbound import PredictionInterval
    >>> from nwbound.engine.device._results import usefulness_on_device
    >>> p = torch.tensor([[0.5, 0.5]], dtype=torch.float64)
    >>> iv = PredictionInterval(proba=p, lower=0 * p, upper=1 + 0 * p, epsilon=p, bias=p, sampling=p,
    ...                         kappa=p[:, 0], n_eff=p[:, 0], vacuous=torch.tensor([False]), bandwidth=p[:, 0])
    >>> report = usefulness_on_device(iv)
    >>> report.useless, report.share_trivial, report.cause
    (True, 1.0, 'sampling')
    """
    from ...diagnostics import BoundUsefulness

    n = int(interval.proba.shape[0])
    if n == 0:
        return None
    values = list(parts) if parts is not None else usefulness_parts(interval).tolist()  # one read
    trivial, vacuous, certified, median_share, mean_share, factor, median_eps = values
    return BoundUsefulness.from_summary(n, trivial / n, vacuous / n, certified / n, median_share, mean_share, factor,
                                        median_eps, beta=beta, trivial_threshold=trivial_threshold, context=context)


def _interval_to_host(iv: PredictionInterval) -> PredictionInterval:
    """A tensor interval as NumPy in one device-to-host copy (every field packed into one float64 block)."""
    import torch

    names = [f.name for f in dataclasses.fields(iv)]
    cols = [getattr(iv, k).to(torch.float64).reshape(iv.proba.shape[0], -1) for k in names]
    packed = torch.cat(cols, 1).cpu().numpy()
    out, at = {}, 0
    for k, c in zip(names, cols):
        block = packed[:, at : at + c.shape[1]]
        at += c.shape[1]
        ref = getattr(iv, k)
        if ref.dtype == torch.bool:
            out[k] = block[:, 0] > 0.5
        else:
            out[k] = np.ascontiguousarray(block if ref.ndim == 2 else block[:, 0])
    return PredictionInterval(**out)


def device_certificates(interval: PredictionInterval) -> tuple[Any, Any]:
    """:attr:`~nwbound.PredictionInterval.certified` and :attr:`~nwbound.PredictionInterval.error_upper`
    of an interval whose arrays are PyTorch tensors, computed where they live (same rules: the
    predicted class is the first of largest ``proba``; it is certified when its lower end lies
    strictly above every other class's upper end and the row is not vacuous).

    Examples
    --------
    >>> import numpy as np
    >>> import torch
    >>> from nwbound import PredictionInterval
    >>> from nwbound.engine.device._results import device_certificates
    >>> iv = PredictionInterval.from_parts(
    ...     proba=np.array([[0.9, 0.1], [0.5, 0.5]]), bias=np.full((2, 2), 0.1),
    ...     sampling=np.full((2, 2), 0.2), kappa=np.array([10.0, 10.0]), n_eff=np.array([8.0, 8.0]),
    ...     vacuous=np.array([False, False]), bandwidth=np.array([1.0, 1.0]))
    >>> t = PredictionInterval(**{k: torch.as_tensor(v) for k, v in vars(iv).items() if v is not None})
    >>> certified, error_upper = device_certificates(t)
    >>> certified.tolist(), [round(v, 2) for v in error_upper.tolist()]
    ([True, False], [0.4, 0.8])
    """
    import torch

    proba, lower, upper = interval.proba, interval.lower, interval.upper
    n, C = proba.shape
    top = torch.argmax(proba, dim=1)  # the first of the largest, as np.argmax
    low_top = torch.gather(lower, 1, top[:, None])[:, 0]
    live = ~interval.vacuous.to(torch.bool)
    if C < 2:
        return live, 1.0 - low_top
    others = upper.scatter(1, top[:, None], -math.inf).amax(1)
    return (low_top > others) & live, 1.0 - low_top


def interval_on_host(interval: PredictionInterval) -> PredictionInterval:
    """A copy of ``interval`` with every array as NumPy (:func:`~nwbound.engine.device._array_api.to_host`).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import PredictionInterval
    >>> from nwbound.engine.device._results import interval_on_host
    >>> iv = PredictionInterval.from_parts(proba=np.array([[1.0]]), bias=np.zeros((1, 1)),
    ...     sampling=np.zeros((1, 1)), kappa=np.ones(1), n_eff=np.ones(1), vacuous=np.array([False]),
    ...     bandwidth=np.ones(1))
    >>> interval_on_host(iv).proba.tolist()
    [[1.0]]
    """
    values = [getattr(interval, f.name) for f in dataclasses.fields(interval)]
    if all(compat().is_torch_array(v) for v in values):  # the device path's intervals: one packed copy
        return _interval_to_host(interval)
    return dataclasses.replace(interval, **{f.name: None if getattr(interval, f.name) is None
                                            else to_host(getattr(interval, f.name)) for f in dataclasses.fields(interval)})


def delivered(out: dict, X: Any) -> dict:
    """Intervals computed on the device, where ``X`` lives: on its device for PyTorch queries,
    NumPy otherwise (one packed copy per setting).

    Examples
    --------
    >>> import numpy as np
    >>> import torch
    >>> from nwbound import PredictionInterval
    >>> from nwbound.engine.device._results import delivered
    >>> iv = PredictionInterval.from_parts(proba=np.array([[1.0]]), bias=np.zeros((1, 1)),
    ...     sampling=np.zeros((1, 1)), kappa=np.ones(1), n_eff=np.ones(1), vacuous=np.array([False]),
    ...     bandwidth=np.ones(1))
    >>> t = PredictionInterval(**{k: torch.as_tensor(v) for k, v in vars(iv).items() if v is not None})
    >>> type(delivered({None: t}, np.zeros((1, 1)))[None].proba).__name__
    'ndarray'
    """
    if compat().is_torch_array(X):
        return {name: dataclasses.replace(iv, **{f.name: getattr(iv, f.name).to(X.device)
                                                 for f in dataclasses.fields(iv)}) for name, iv in out.items()}
    return {name: interval_on_host(iv) for name, iv in out.items()}
