"""Frequentist error bounds for kernel-weighted class-probability estimates."""

from ._bounds import (
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
from ._combine import BoundSpec

__all__ = [
    "BOUND_NAMES",
    "COVERAGE_NAMES",
    "BoundSpec",
    "effective_delta",
    "effective_sample_size",
    "hoeffding_sampling",
    "lipschitz_bias",
    "paper_sampling",
    "radius_bias",
    "selfnormalized_sampling",
    "tail_bias",
]
