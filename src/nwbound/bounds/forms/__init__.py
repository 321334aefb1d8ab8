"""The bound forms, one file each, found by name in a registry.

* :mod:`.hoeffding` ``"hoeffding"`` (the ``p̂ ± ε`` default), :mod:`.paper` ``"paper"``,
  :mod:`.selfnormalized` ``"selfnormalized"``: ``p̂ ± (bias + sampling)``;
* :mod:`.chernoff` ``"chernoff"``: per-class limits from the band-Chernoff test.

A new form is one file: a :class:`BoundForm` subclass registered with :func:`register_bound_form`,
in this package (every public module here is imported, so its form is registered with the
package's) or in the user's own code. The developer page ``docs/source/extending.md`` says how, and
what its proof sketch must show.
"""

import importlib
import pkgutil

from ._common import (
    COVERAGE_NAMES,
    effective_delta,
    effective_sample_size,
    lipschitz_bias,
    plus_minus_limits,
    sum_error_margin,
)
from ._registry import (
    BOUND_NAMES,
    BoundForm,
    bound_form_names,
    get_bound_form,
    register_bound_form,
    unregister_bound_form,
)
from .hoeffding import hoeffding_limits, hoeffding_sampling
from .chernoff import CHERNOFF_FALLBACK_START
from .paper import TAIL_RADIUS, paper_sampling, radius_bias, tail_bias
from .selfnormalized import selfnormalized_sampling

for _module in pkgutil.iter_modules(__path__):  # a form added as one file here registers itself
    if not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = [
    "BOUND_NAMES",
    "CHERNOFF_FALLBACK_START",
    "COVERAGE_NAMES",
    "TAIL_RADIUS",
    "BoundForm",
    "bound_form_names",
    "effective_delta",
    "effective_sample_size",
    "get_bound_form",
    "hoeffding_limits",
    "hoeffding_sampling",
    "lipschitz_bias",
    "paper_sampling",
    "plus_minus_limits",
    "radius_bias",
    "register_bound_form",
    "selfnormalized_sampling",
    "sum_error_margin",
    "tail_bias",
    "unregister_bound_form",
]
