"""The held-out check itself: intervals from one pass of kernel sums, the count and contrast
tests at each ``L``, their Bonferroni split and the pruning of tests that cannot reject
(:mod:`nwbound.lipschitz_check`, steps 1–5)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._contrast import _contrast_strata, _contrast_tests, _space_coordinates
from ._inputs import _check_rows
from ._results import LipschitzCheck
from ._tails import _mean_bounded_sf, _null_survival, _tail_at, _thresholds


def _tightened(lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each class's interval intersected with what the others imply through ``Σ_c p_c = 1``."""
    lo = np.maximum(lower, 1.0 - (upper.sum(axis=1, keepdims=True) - upper))
    hi = np.minimum(upper, 1.0 - (lower.sum(axis=1, keepdims=True) - lower))
    return np.clip(lo, 0.0, 1.0), np.clip(hi, 0.0, 1.0)


def _one_check(
    test_iv: Any, model_iv: Any, labels: np.ndarray, classes: np.ndarray, *, free: int, per_class: bool,
    alpha: float, beta: float, strata: list[dict[str, Any]] | None = None, lipschitz: float | None = None,
) -> dict[str, Any]:
    n, n_classes = test_iv.proba.shape
    rows = np.arange(n)
    top = np.argmax(model_iv.proba, axis=1)
    certified = np.asarray(model_iv.certified, dtype=bool)
    wrong = labels != top
    lo, hi = _tightened(test_iv.lower, test_iv.upper)
    names = ["certified rows: errors"]
    ceilings = [1.0 - lo[rows, top]]
    masks = [certified]
    observed = [int(np.count_nonzero(wrong & certified))]
    if per_class:
        # Each class's count is tested within the rows predicted c and within the others (a choice
        # from the inputs and N only). The usual bias has one sign on each side of a decision
        # boundary (p̂ pulled toward the local mean), and would cancel in a count over all rows.
        tested = [1] if n_classes == 2 else range(n_classes)  # two classes: class 0's tests are the same
        for c in tested:
            label = classes.tolist()[c]
            is_c = labels == c
            for group, mask in (("predicted", top == c), ("not predicted", top != c)):
                where = f"class {label!r} in rows {group} {label!r}"
                names += [f"{where}: too many", f"{where}: too few"]
                ceilings += [hi[:, c], 1.0 - lo[:, c]]
                masks += [mask, mask]
                observed += [int(np.count_nonzero(is_c & mask)), int(np.count_nonzero(~is_c & mask))]
    observed_arr = np.asarray(observed)
    sf, n_free, expected = _null_survival(np.vstack(ceilings), np.vstack(masks), free)
    p_value = _tail_at(sf, observed_arr - n_free)
    # Tests that cannot reject whatever the labels (even every row counted is not rare enough under
    # the null) take no share of the level. The choice uses the ceilings only, never H's labels.
    smallest = _tail_at(sf, np.vstack(masks).sum(axis=1) - n_free)
    n_counts = len(names)
    contrast: list[dict[str, Any]] = []
    if strata and lipschitz is not None:
        # Contrast tests: labels at the two ends of p̂_c against what L allows between matched rows.
        # They need neither the intervals nor the allowance; they join the same Bonferroni family.
        c_terms, c_bound, c_observed, c_smallest = _contrast_tests(strata, labels, lipschitz)
        c_p = _mean_bounded_sf(c_terms, c_bound, c_observed)
        for st, terms, bound, obs in zip(strata, c_terms, c_bound, c_observed):
            label = classes.tolist()[st["class"]]
            names.append(f"contrast of class {label!r}, top and bottom {st['share']:g} of p̂")
            observed.append(int(obs))
            contrast.append({"pairs": int(st["high"].size), "terms": int(terms), "mean_bound": float(bound),
                             "mean_distance": float(st["distance"].mean())})
        p_value = np.concatenate([p_value, c_p])
        smallest = np.concatenate([smallest, c_smallest])
        expected = np.concatenate([expected, c_bound])
    used = np.ones(len(names), dtype=bool)
    while True:  # each pass only drops tests, and a smaller set raises the level: it ends
        kept = used & (smallest <= (alpha - beta) / max(int(used.sum()), 1))
        if np.array_equal(kept, used):
            break
        used = kept
    level = (alpha - beta) / max(int(used.sum()), 1)
    threshold = _thresholds(sf, n_free, level)
    if contrast:
        counts = np.arange(max(d["terms"] for d in contrast) + 1)
        for d in contrast:  # the largest S whose bound on P(S ≥ s + 1) stays above the level
            k = counts[: d["terms"] + 1]
            ok = _mean_bounded_sf(np.full(k.size, d["terms"]), np.full(k.size, d["mean_bound"]), k + 1) > level
            threshold = np.append(threshold, int(np.flatnonzero(ok).max(initial=-1)) + 1 if ok.any() else 0)
    rejected = used & (p_value <= level)
    sizes = [int(mask.sum()) for mask in masks] + [2 * d["pairs"] for d in contrast]
    tests = tuple(
        {
            "test": name,
            "rows": size,
            "observed": obs,
            "expected": float(exp),
            "threshold": int(t),
            "p_value": float(p),
            "used": bool(u),
            "rejected": bool(r),
            **({"kind": "count"} if i < n_counts else {"kind": "contrast", **contrast[i - n_counts]}),
        }
        for i, (name, size, obs, exp, t, p, u, r) in enumerate(zip(
            names, sizes, observed, expected, threshold, p_value, used, rejected
        ))
    )
    return {
        "n_certified": int(certified.sum()),
        "errors_certified": observed[0],
        "expected_errors": float(expected[0]),
        "threshold": int(threshold[0]),
        "p_value": float(min(1.0, used.sum() * float(p_value[used].min()))) if used.any() else 1.0,
        "rejected": bool(rejected.any()),
        "rejected_by": tuple(t["test"] for t in tests if t["rejected"]),
        "tests": tests,
    }


def _intervals(model: Any, X: Any, bounds: dict, bandwidth_at: float | None, mapped: np.ndarray | None = None) -> dict:
    """Every setting's intervals from one pass of kernel sums; with ``bandwidth_at`` and a grid of
    bandwidths, each query keeps the bandwidth chosen at ``lipschitz=bandwidth_at`` for all settings.

    Of the model's own settings (names ``("model", i)``) the check reads ``proba`` and ``certified``
    only: an nwbound estimator gives just those (``_interval_settings``), the same arrays, with the
    band-Chernoff search cut to what the certified mask needs. ``mapped``: the rows in the model's
    space (:func:`._contrast._space_coordinates`), which it then need not map again."""
    grid = getattr(model, "bandwidths_", None)
    if bandwidth_at is None or grid is None or np.size(grid) < 2:
        if hasattr(model, "_interval_settings"):
            certified_only = frozenset(k for k in bounds if k[0] == "model")
            if mapped is None:
                return model._interval_settings(X, bounds, certified_only=certified_only)
            return model._interval_settings(X, bounds, certified_only=certified_only, mapped=mapped)
        return model.predict_interval(X, bounds=bounds)
    ranking = model.bandwidth_ranking(X)
    column = model.choose_bandwidths(ranking, bounds={"pin": {"lipschitz": bandwidth_at}})["pin"]
    stats = model.kernel_statistics(X, bounds=bounds, bandwidth_index=column)
    return model.interval_from_statistics(stats, bounds)


def _run_checks(
    model: Any, X: Any, y: Any, values: list[float] | None, *, alpha: float, beta: float,
    free_share: float, per_class: bool, certified_at: str = "model", bandwidth_at: float | None = None,
    contrast: bool = True, mapped: np.ndarray | None = None,
) -> list[LipschitzCheck]:
    """One check per value of ``values`` (None: the model's own assumption)."""
    return _run_check_families(
        model, X, y, values, alpha=alpha, beta=beta, free_share=free_share, per_class=per_class,
        certified_at=certified_at, bandwidth_at=bandwidth_at, contrasts=(contrast,), mapped=mapped,
    )[0]


def _run_check_families(
    model: Any, X: Any, y: Any, values: list[float] | None, *, alpha: float, beta: float,
    free_share: float, per_class: bool, certified_at: str = "model", bandwidth_at: float | None = None,
    contrasts: tuple[bool, ...] = (True,), mapped: np.ndarray | None = None,
) -> list[list[LipschitzCheck]]:
    """For each flag of ``contrasts`` (with or without the contrast tests), one check per value, all
    from **one** set of intervals: the families differ only in the tests run on them (and so in
    their Bonferroni split), never in the intervals. ``mapped``: ``X`` in the model's space where the
    caller has it (:func:`._contrast._space_coordinates` otherwise maps it)."""
    labels, n = _check_rows(model, X, y)
    free = int(math.floor(free_share * n))
    delta_test = min(beta * (free + 1) / n, 0.5)  # P(|F| > m) ≤ n·δ_t/(m + 1) = β
    test_setting = {"delta": delta_test, "coverage": "simultaneous"}
    if values is None:  # the model's own assumption, whatever form it takes
        margin = model.get_params().get("margin")
        if getattr(model, "cross_fit_models_", None) is not None:
            # Cross-fitted: with lipschitz="auto" each model's own L in its own space (no single
            # beta_); the record names the largest (lipschitz_), and the intervals are each model's at
            # its own setting. A number (given at fit or set after it) is every model's L.
            lipschitz = model.get_params().get("lipschitz")
            beta_own = (1.0 / float(margin) if margin is not None
                        else None if lipschitz is None
                        else getattr(model, "lipschitz_", None) if isinstance(lipschitz, str) else float(lipschitz))
        else:
            beta_own = getattr(model, "beta_", None)
        if beta_own is None:
            raise ValueError(
                "model has no assumption to check (lipschitz=None and margin=None): pass lipschitz=L "
                "(or a list of values) to check_lipschitz."
            )
        described = [(None, float(margin)) if margin is not None else (float(beta_own), None)]
        bounds: dict[Any, dict[str, Any]] = {("test", 0): dict(test_setting)}
        if certified_at == "model":
            bounds[("model", 0)] = {}
    else:
        described = [(float(v), None) for v in values]
        bounds = {}
        for i, v in enumerate(values):
            bounds[("test", i)] = {"lipschitz": v, **test_setting}
            if certified_at == "model":
                bounds[("model", i)] = {"lipschitz": v}
    # The contrasts' coordinates first: the model's intervals then take them instead of mapping X again.
    Z = _space_coordinates(model, X, mapped) if any(contrasts) and described[0][0] is not None else None  # not a margin
    intervals = _intervals(model, X, bounds, bandwidth_at, Z if getattr(model, "metric_", None) is not None else None)
    classes = np.asarray(model.classes_)
    model_delta = float(model.get_params()["delta"]) if certified_at == "model" else delta_test
    strata = None
    if Z is not None:
        strata = _contrast_strata(Z, np.asarray(intervals[("test", 0)].proba),
                                  [1] if classes.size == 2 else range(classes.size))
    families = []
    for contrast in contrasts:
        checks = []
        for i, (lip, margin) in enumerate(described):
            res = _one_check(
                intervals[("test", i)], intervals[("model" if certified_at == "model" else "test", i)], labels,
                classes, free=free, per_class=per_class, alpha=alpha, beta=beta,
                strata=strata if contrast else None, lipschitz=lip,
            )
            checks.append(
                LipschitzCheck(
                    lipschitz=lip, margin=margin, n_rows=n, allowance=free, alpha=alpha, beta=beta,
                    delta=delta_test, model_delta=model_delta, free_share=free_share, **res,
                )
            )
        families.append(checks)
    return families
