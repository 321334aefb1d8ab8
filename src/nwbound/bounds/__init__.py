"""Frequentist error bounds for kernel-weighted class-probability estimates."""

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
    "effective_delta",
    "effective_sample_size",
    "hoeffding_sampling",
    "lipschitz_bias",
    "paper_sampling",
    "radius_bias",
    "selfnormalized_sampling",
    "tail_bias",
]
