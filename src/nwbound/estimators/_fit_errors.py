"""Fit-time rules the base classifier shares: whether ``fit`` chooses L itself, and the error that
names the settings when the training rows cannot be split (:mod:`._base`)."""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from ..spaces import GroupsError, chooses_lipschitz

__all__: list[str] = []


def _auto_lipschitz(estimator: Any) -> bool:
    """:func:`nwbound.spaces.chooses_lipschitz` of this estimator's ``lipschitz`` and ``margin``."""
    return chooses_lipschitz(getattr(estimator, "lipschitz", None), getattr(estimator, "margin", None))


def _groups_count(groups: np.ndarray | None) -> str:
    k = 0 if groups is None else np.unique(groups).shape[0]
    return "their groups" if groups is None else f"{k} group" + ("s" if k != 1 else "")


@contextlib.contextmanager
def _split_settings_errors(estimator: Any, labels: np.ndarray, groups: np.ndarray | None = None):
    """Turn a ValueError raised while splitting the training rows, fitting the learned map or
    choosing L on held-out rows into one that names the settings, the cause and the fix (the paper's
    classifier: ``metric=None`` with a numeric ``lipschitz``), raised from here (no deep traceback)."""
    try:
        yield
    except ValueError as exc:
        if getattr(exc, "nwbound_split_settings", False):  # raised by this guard already (a cross-fitted model)
            raise
        auto_l = _auto_lipschitz(estimator)
        cross_fit = getattr(estimator, "cross_fit", False)
        if getattr(estimator, "_forced_split", None) is not None:  # one model of a cross-fitted estimator
            cross_fit = "a cross-fitted model's"
        names = ["metric", "lipschitz"] if auto_l else ["metric"]
        settings = ", ".join(f"{name}={getattr(estimator, name)!r}" for name in names)
        if isinstance(exc, GroupsError):  # too few groups, not too few rows: more rows would not help
            splits = ["a metric share of whole groups to fit the space"]
            if cross_fit is not False:
                splits = [f"cross_fit={cross_fit!r}: the roles of the shares swapped, or folds of whole groups"
                          if isinstance(cross_fit, (bool, int, np.integer)) or cross_fit == "auto"
                          else "the groups of this model's share"]
            if auto_l:
                splits.append("lipschitz='auto': each metric share split again into map and check groups")
            fixes = ["a numeric lipschitz (no check split)"] if auto_l else []
            if cross_fit is not False:
                fixes.append("cross_fit=False (one split)")
            fixes.append("metric=None with a numeric lipschitz (no split at all)")
            message = (
                f"The settings {settings} could not split these {labels.shape[0]} training rows in "
                f"{_groups_count(groups)}: {exc} Every split keeps "
                f"whole groups on one side ({'; '.join(splits)}), so these settings need more groups. Give more "
                f"groups, or settings that split less: {', or '.join(fixes)}."
            )
        else:
            counts = np.bincount(np.asarray(labels))
            message = (
                f"The settings {settings} could not be fitted on these {labels.shape[0]} training rows "
                f"(fewest rows in a class: {int(counts.min())}): {exc} These settings hold training rows out of "
                "the kernel sums, to fit the space and to check L, and need enough rows in every class (in "
                "practice a few dozen or more per class; user guide, \"Defaults\"). Give more rows, or fit the "
                "paper's classifier on the features as given: metric=None with a numeric lipschitz (e.g. from "
                "nwbound.assumptions.estimate_lipschitz)."
            )
        error = ValueError(message)
        error.nwbound_split_settings = True
        raise error from None
