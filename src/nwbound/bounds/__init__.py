"""Frequentist error bounds for kernel-weighted class-probability estimates.

The forms (``"hoeffding"``, ``"chernoff"``, ``"paper"``, ``"selfnormalized"``) are registered
objects, one file each in :mod:`.forms` (a new one: :func:`register_bound_form`); the band-Chernoff
test's searches are :func:`chernoff_interval` and :mod:`._chernoff_binned`; :class:`BoundSpec`
turns kernel statistics into limits for any registered form.
"""

from . import forms
from ._chernoff import chernoff_interval, group_hoeffding_interval
from ._spec import BoundSpec
from .forms import *  # noqa: F403 - the forms' public names: the registry and the shared rules

__all__ = ["BoundSpec", "chernoff_interval", "group_hoeffding_interval", *forms.__all__]
