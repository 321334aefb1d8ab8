"""The registry of bound forms: :class:`BoundForm` and the functions that add and find them by name.

A form is a :class:`BoundForm` object registered under its ``name``; ``BoundSpec(form=name)``,
``NadarayaWatsonClassifier(bound=name)`` and ``predict_interval(X, bounds={...: {"bound": name}})``
find it here. How to add one (one file, with a proof sketch): the developer page
``docs/source/extending.md``.
"""

from __future__ import annotations

from collections.abc import Iterator, Set
from typing import Any

import numpy as np

from ._common import plus_minus_limits

__all__ = [
    "BOUND_NAMES",
    "BoundForm",
    "bound_form_names",
    "get_bound_form",
    "register_bound_form",
    "unregister_bound_form",
]

_FORMS: dict[str, "BoundForm"] = {}
_BUILT_IN: set[str] = set()


class BoundForm:
    """One bound form: what it reads of the kernel statistics and how it turns them into limits.

    Subclass it, set :attr:`name` and implement :meth:`parts`; a ``p̂ ± ε`` form needs nothing
    else. A form whose limits come from a test (the band-Chernoff one) overrides :meth:`limits`
    (and :meth:`certified` where it has a shortcut). Register the instance with
    :func:`register_bound_form`.

    Attributes
    ----------
    name : str
        The name the estimators' ``bound`` parameter and ``bounds`` settings use.
    needs_distance_sum : bool
        The statistics must carry ``D = Σ w K ‖y − y_i‖`` (the data-dependent drift ``β·D/κ``).
    needs_histogram : bool
        The limits come from a test that reads the distance histogram (all training points) or the
        per-point statistics (the localized classifier), as the band-Chernoff form does.

    Examples
    --------
    A deliberately loose form, twice the Hoeffding ε (valid: wider than a valid interval):

    >>> from nwbound.bounds import BoundForm, BoundSpec, lipschitz_bias, hoeffding_sampling
    >>> class Doubled(BoundForm):
    ...     name = "doubled_example"
    ...     def parts(self, spec, kappa, sq_sum, dist_sum, bandwidth, tail_mass=None):
    ...         return (2 * lipschitz_bias(spec.beta, dist_sum, kappa),
    ...                 2 * hoeffding_sampling(kappa, sq_sum, spec.delta_prime))
    >>> import numpy as np
    >>> from nwbound.bounds import register_bound_form, unregister_bound_form
    >>> _ = register_bound_form(Doubled())
    >>> spec = BoundSpec(form="doubled_example", beta=1.0, delta_prime=0.05)
    >>> [p.round(3) for p in spec.parts(np.array([4.0]), np.array([4.0]), np.array([0.4]), 0.5)]
    [array([0.2]), array([1.358])]
    >>> unregister_bound_form("doubled_example")
    """

    name: str = ""
    needs_distance_sum: bool = True
    needs_histogram: bool = False

    def needs_tail_mass(self, spec: Any) -> bool:
        """Whether the statistics must carry the kernel mass beyond ``λ*`` (the paper's lemma 3)."""
        return False

    def check(self, kernel: Any, *, ck: float, localized: bool) -> tuple[str, str] | None:
        """Refuse settings the form cannot bound (``ValueError`` naming the fix), at fit and predict.

        Returns None, or ``(form, message)``: the estimator then uses the registered form ``form``
        instead, with a ``UserWarning`` saying ``message`` (only where an assumption is given).
        """
        return None

    def parts(self, spec: Any, kappa: np.ndarray, sq_sum: np.ndarray, dist_sum: np.ndarray | None,
              bandwidth: np.ndarray | float, tail_mass: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(bias, sampling)`` per query and bandwidth, shaped like ``kappa`` (``inf`` where κ = 0).

        The label-free parts of ε: their sum chooses each query's bandwidth under ``bandwidth="auto"``,
        and a ``p̂ ± ε`` form's limits are ``p̂ ∓ min(1, bias + sampling)``.
        """
        raise NotImplementedError(f"The bound form {self.name!r} must implement parts().")

    def limits(self, spec: Any, stats: Any, proba: np.ndarray, bias: np.ndarray, sampling: np.ndarray,
               vacuous: np.ndarray) -> tuple[np.ndarray, ...]:
        """Per-class ``(lower, upper, epsilon, bias, sampling)``, each (n, C).

        ``bias`` and ``sampling`` (n,) are :meth:`parts` at the statistics' one bandwidth, already
        moved for the sums' error ``ρ``; ``stats`` the host statistics (``G = 1``), ``vacuous`` κ = 0.
        The default is the ``p̂ ± ε`` rule (:func:`~nwbound.bounds.plus_minus_limits`).
        """
        lower, upper, epsilon, bias, sampling = plus_minus_limits(proba, bias, sampling, vacuous)
        n_classes = proba.shape[1]
        return (lower, upper, epsilon, np.repeat(bias[:, None], n_classes, axis=1),
                np.repeat(sampling[:, None], n_classes, axis=1))

    def certified(self, spec: Any, stats: Any, proba: np.ndarray) -> np.ndarray | None:
        """Whether :meth:`limits` certify each prediction, computed by a shortcut, or None (no shortcut)."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def register_bound_form(form: BoundForm, *, replace: bool = False) -> BoundForm:
    """Make ``form`` available by its name to :class:`~nwbound.bounds.BoundSpec` and the estimators.

    Parameters
    ----------
    form : BoundForm
        An instance with a non-empty ``name``.
    replace : bool, default=False
        Replace a form registered under the same name (the built-in forms cannot be replaced).

    Returns
    -------
    BoundForm
        ``form``.

    Raises
    ------
    TypeError
        ``form`` is not a :class:`BoundForm` instance.
    ValueError
        Its name is empty, or taken (without ``replace``, or by a built-in form).

    Examples
    --------
    >>> from nwbound.bounds import BoundForm, register_bound_form, unregister_bound_form
    >>> class Vacuous(BoundForm):
    ...     name = "vacuous_example"
    ...     def parts(self, spec, kappa, sq_sum, dist_sum, bandwidth, tail_mass=None):
    ...         return kappa * 0 + 1.0, kappa * 0
    >>> register_bound_form(Vacuous()).name
    'vacuous_example'
    >>> unregister_bound_form("vacuous_example")
    """
    if not isinstance(form, BoundForm):
        raise TypeError(f"form must be a BoundForm instance (subclass nwbound.bounds.BoundForm), got {type(form).__name__}.")
    name = form.name
    if not isinstance(name, str) or not name:
        raise ValueError(f"A bound form needs a non-empty string name (the class attribute name), got {name!r}.")
    if name in _BUILT_IN or (name in _FORMS and not replace):
        raise ValueError(f"A bound form named {name!r} is already registered; choose another name"
                         + ("." if name in _BUILT_IN else ", or pass replace=True."))
    _FORMS[name] = form
    return form


def unregister_bound_form(name: str) -> None:
    """Remove the form registered as ``name`` (not a built-in one).

    Raises
    ------
    ValueError
        ``name`` is a built-in form or not registered.

    Examples
    --------
    >>> from nwbound.bounds import unregister_bound_form
    >>> unregister_bound_form("hoeffding")
    Traceback (most recent call last):
        ...
    ValueError: The built-in bound form 'hoeffding' cannot be removed.
    """
    if name in _BUILT_IN:
        raise ValueError(f"The built-in bound form {name!r} cannot be removed.")
    if name not in _FORMS:
        raise ValueError(f"No bound form {name!r} is registered; the registered ones are {bound_form_names()}.")
    del _FORMS[name]


def get_bound_form(name: str) -> BoundForm:
    """The form registered as ``name``.

    Raises
    ------
    ValueError
        No form has that name; the message lists the registered ones.

    Examples
    --------
    >>> from nwbound.bounds import get_bound_form
    >>> get_bound_form("paper").needs_distance_sum
    False
    """
    form = _FORMS.get(name) if isinstance(name, str) else None
    if form is None:
        raise ValueError(f"bound must be one of {', '.join(repr(n) for n in bound_form_names())}, got {name!r}.")
    return form


def bound_form_names() -> tuple[str, ...]:
    """The registered forms' names, sorted.

    Examples
    --------
    >>> from nwbound.bounds import bound_form_names
    >>> bound_form_names()
    ('chernoff', 'hoeffding', 'paper', 'selfnormalized')
    """
    return tuple(sorted(_FORMS))


class _Names(Set):
    """The registered names, read at each use (a form registered later is in it): what the
    estimators' parameter check, the command line's choices and :func:`check_choice` read."""

    def __contains__(self, name: object) -> bool:
        return name in _FORMS

    def __iter__(self) -> Iterator[str]:
        return iter(bound_form_names())

    def __len__(self) -> int:
        return len(_FORMS)

    def __repr__(self) -> str:
        return repr(bound_form_names())

    @classmethod
    def _from_iterable(cls, names: Any) -> frozenset:  # set operations give a plain frozenset
        return frozenset(names)


BOUND_NAMES = _Names()


def _register_built_in(form: BoundForm) -> BoundForm:
    """Register one of the package's own forms (kept: never replaced or removed)."""
    register_bound_form(form)
    _BUILT_IN.add(form.name)
    return form
