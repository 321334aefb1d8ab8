"""Frequentist error bounds for kernel-weighted class-probability estimates.

The ``p̂ ± ε`` forms (``"hoeffding"``, ``"paper"``, ``"selfnormalized"``) are in
:mod:`._forms`; the band-Chernoff test (``"chernoff"``) in :func:`chernoff_interval`;
:class:`BoundSpec` turns kernel statistics into limits for any of them.
"""

from ._chernoff import chernoff_interval, group_hoeffding_interval
from ._forms import (
    BOUND_NAMES,
    COVERAGE_NAMES,
    effective_delta,
    effective_sample_size,
    hoeffding_sampling,
    lipschitz_bias,
    paper_sampling,
    radius_bias,
    selfnormalized_sampling,
    tail_bias,
)
from ._spec import TAIL_RADIUS, BoundSpec

__all__ = [
    "BOUND_NAMES",
    "COVERAGE_NAMES",
    "BoundSpec",
    "TAIL_RADIUS",
    "chernoff_interval",
    "effective_delta",
    "effective_sample_size",
    "group_hoeffding_interval",
    "hoeffding_sampling",
    "lipschitz_bias",
    "paper_sampling",
    "radius_bias",
    "selfnormalized_sampling",
    "tail_bias",
]
