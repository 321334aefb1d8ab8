"""Exact kernel sums on a dyadic grid, as :class:`~nwbound.engine.KernelStatistics` (shared by the rounding tests).

Points ``x = k/grid`` and queries ``j/grid``, bandwidth 1, weights ``2^-e``: every distance, kernel
value (Epanechnikov ``1 − u²``, boxcar 0/1), weight and product is an exact dyadic rational, so the
sums are Python integers times one scale (:class:`fractions.Fraction`), independent of any engine.
``tests/test_cpu_rounding.py`` and ``tests/test_gpu_rounding.py`` check that an engine's interval
contains the library's bound of these exact sums.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from nwbound.engine import KernelStatistics
from nwbound.kernels import get_kernel


def fraction_down(f: Fraction) -> float:
    """The largest float ``≤ f`` (a reference that never rounds a sum up: a narrower interval)."""
    x = float(f)
    return x if Fraction(x) <= f else math.nextafter(x, -math.inf)


def exact_grid_sums(k, y, e, queries, *, grid: int, bins: int, kernel: str = "epanechnikov") -> list[dict]:
    """Per query ``j``: the exact class sums ``S``, ``Σ a²`` (``sq``), ``Σ a·d`` (``D``), per histogram bin of
    ``u²`` the mass ``hm``, ``Σ a·d`` ``hd``, point count ``hc`` and ``Σ w/w_max`` ``hw``, and per point
    ``a_i`` (``pm``) and ``d_i`` (``pd``, exact dyadic floats), with ``a_i = w_i K(|k_i − j|/grid)``."""
    k, y, e = np.asarray(k), np.asarray(y), np.asarray(e)
    top = int(e.max())
    scale = Fraction(1, grid * grid * 2**top)  # a_i = A_i·scale with A_i an integer
    weights = (2 ** (top - e)).astype(object)
    rows = []
    for j in queries:
        r2 = (k - j) ** 2
        inside = r2 <= grid * grid
        if kernel == "epanechnikov":
            kn = np.where(inside, grid * grid - r2, 0)
        elif kernel == "boxcar":
            kn = np.where(inside, grid * grid, 0)
        else:
            raise ValueError(f"exact grid sums are written for epanechnikov and boxcar, not {kernel!r}")
        a = kn.astype(object) * weights
        dist = np.abs(k - j).astype(object)  # distance·grid
        b = np.minimum((r2 * bins) // (grid * grid), bins - 1)
        in_bin = [inside & (b == i) for i in range(bins)]
        rows.append(dict(
            S=[Fraction(int(a[y == c].sum())) * scale for c in (0, 1)],
            sq=Fraction(int((a * a).sum())) * scale * scale,
            D=Fraction(int((a * dist).sum())) * scale / grid,
            hm=[Fraction(int(a[m].sum())) * scale for m in in_bin],
            hd=[Fraction(int((a * dist)[m].sum())) * scale / grid for m in in_bin],
            hc=[int(m.sum()) for m in in_bin],
            hw=[Fraction(int(weights[m].sum()), 2**top) for m in in_bin],
            pm=[float(Fraction(int(v)) * scale) for v in a],  # exact: dyadic
            pd=[float(Fraction(int(v), grid)) for v in dist],
        ))
    return rows


def exact_statistics(k, y, e, queries, *, grid: int, bins: int, kernel: str = "epanechnikov",
                     per_point: bool = False, round_down: bool = False) -> KernelStatistics:
    """:func:`exact_grid_sums` as bound-form statistics (``u2_error = 0``, ``λ = 1``): with the histogram's
    fields, or with ``per_point`` the per-point masses and distances; ``round_down``: every sum as the
    largest float below it (:func:`fraction_down`), else the nearest float."""
    e = np.asarray(e)
    rows = exact_grid_sums(k, y, e, queries, grid=grid, bins=bins, kernel=kernel)
    to_float = fraction_down if round_down else float

    def field(name, conv=to_float):
        return np.array([[[conv(v) for v in r[name]]] for r in rows])

    if per_point:
        extra = dict(point_mass=field("pm", float), point_dist=np.array([r["pd"] for r in rows]))
    else:
        extra = dict(histogram=field("hw", float), hist_edges=np.linspace(0.0, 1.0, bins + 1), hist_mass=field("hm"),
                     hist_dist=field("hd"), hist_count=field("hc", float), weight_min=2.0**-int(e.max()))
    return KernelStatistics(
        class_sums=field("S"), sq_sum=np.array([[to_float(r["sq"])] for r in rows]),
        dist_sum=np.array([[to_float(r["D"])] for r in rows]), bandwidth=np.array([[1.0]]),
        kernel=get_kernel(kernel), outside_box=np.zeros(len(queries), bool), u2_error=0.0,
        weight_max=1.0, uniform_weights=bool((e == 0).all()), **extra,
    )
