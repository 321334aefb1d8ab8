"""``metric="auto"``: the score model chosen by cross-validation on the map rows only."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._stack import caller_stacklevel
from ._trees import model_proba

__all__ = ["AUTO_CV_FOLDS", "AUTO_CV_ROWS", "MetricAutoReport", "auto_candidates", "choose_score_model",
           "chosen_candidate", "fit_score_model", "resolution_sentence", "scan_sentence"]

#: Folds of the cross-validation that compares ``metric="auto"``'s candidate score models (fewer
#: when the smallest class of the map rows has fewer rows).
AUTO_CV_FOLDS = 3
#: Up to this many map rows, the candidates are cross-validated and the winner refitted on every
#: map row; above it, a stratified third of the map rows validates the candidates fitted on the
#: other two thirds (thousands of validation rows: a precise log-loss without more folds), and the
#: winner is kept as fitted, so that each candidate is fitted once (the speed budget at the ECG shapes).
AUTO_CV_ROWS = 4000
#: metric="auto" fits its gradient-boosting model with at most this many boosting iterations
#: (benchmarks/bench_learned_space.py: the speed budget).
AUTO_MAX_ITER = 50


def _auto_scores(model: Any, X: np.ndarray) -> np.ndarray:
    """metric="auto"'s score block: the chosen model's class probabilities (one column for 2 classes).

    Probabilities rather than decision values: a calibrated model's probabilities are close to p,
    so p is smooth in them with a constant near 1, and its confident predictions of one class
    gather at one vertex of the simplex (near neighbours, a small bias term), where decision
    values spread confident rows apart along directions in which p hardly moves."""
    return _score_block(np.asarray(model_proba(model, X), dtype=np.float64))


def _score_block(proba: np.ndarray) -> np.ndarray:
    """:func:`_auto_scores` from the model's ``predict_proba`` output ``proba`` already computed.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.spaces._auto import _score_block
    >>> _score_block(np.array([[0.25, 0.75]])).tolist()
    [[0.75]]
    """
    return proba[:, 1:] if proba.shape[1] == 2 else proba


@dataclass(frozen=True)
class MetricAutoReport:
    """How ``metric="auto"`` chose its score model (``LearnedSpace.report_``, the estimator's ``metric_report_``).

    Every candidate was compared by its out-of-fold log-loss (``cross_val_predict``, stratified
    folds) on the rows that fit the map; no row of the kernel sums, nor any check row of
    ``lipschitz="auto"``, enters the comparison, so the choice is a function of the metric share
    and the guarantee given the space is unchanged.

    Attributes
    ----------
    chosen : str or None
        The candidate whose scores define the space; None when none could be fitted (the space is
        then the standardised features alone, and a warning said so).
    candidates : tuple of dict
        One per candidate: ``name``, ``log_loss`` and ``accuracy`` (out of fold; NaN when not
        measured) and ``status`` (``"chosen"``, ``"compared"`` or ``"dropped: <reason>"``).
    n_rows : int
        Rows that fitted the chosen model.
    n_cv_rows, n_splits : int
        Rows and folds of the comparison (``n_splits = 0``: too few rows per class to
        cross-validate; the candidates were then tried in their listed order; ``n_splits = 1``:
        more than :data:`AUTO_CV_ROWS` map rows, so a stratified third of them validated the
        candidates fitted on the other two thirds, and the winner was kept as fitted).
    random_state : int
        Seed of the folds and of the gradient-boosting candidate.
    feature_weight : float
        ``L_r``: the weight of the standardised features next to the scores, the estimated
        Lipschitz constant of what the scores miss (``p − s``).
    n_held_out : int
        Rows that estimated ``L_r`` (held out of the score model's fit).
    residual_lipschitz : float
        The ``L_r`` the bound assumes: the largest of the held-out estimate (``feature_weight``),
        a second, raise-only estimate on every row the score model never saw (the kernel sums'
        included) and the directional scan of those rows (``scan``); NaN when not estimated.
    resolution : float
        The pilot bandwidth of the finer of the two estimates, in standard deviations of the
        features: variation of ``p − s`` at finer scales is not seen (NaN when not estimated).
    n_resolution_rows : int
        Rows of that estimate.
    scan : dict or None
        The directional scan of the residuals on the rows the score model never saw
        (:func:`scan_sentence`; None when not run).
    validated_on_check_rows : bool
        The candidates were validated on ``lipschitz="auto"``'s check rows (held out of the map)
        and each fitted once, instead of cross-validated on the map rows.
    grouped : bool
        The comparison kept each group whole: folds by group (``groups`` given, and enough
        groups), or check rows held out of the map by whole groups.
    shared_lipschitz : float or None
        The ``L_r`` another cross-fitted model's raise set this model's to (``LearnedSpace``'s
        ``residual_lipschitz_floor``), where it did; None otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.spaces import choose_score_model
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 4)); y = (X[:, 0] + 0.3 * rng.normal(size=300) > 0).astype(int)
    >>> model, report = choose_score_model(X, y, random_state=0)
    >>> report.chosen in ("gradient boosting", "logistic regression"), report.n_splits
    (True, 3)
    >>> "out-of-fold log-loss" in str(report)
    True
    """

    chosen: str | None
    candidates: tuple
    n_rows: int
    n_cv_rows: int
    n_splits: int
    random_state: int = 0
    feature_weight: float = float("nan")
    grouped: bool = False
    n_held_out: int = 0
    validated_on_check_rows: bool = False
    residual_lipschitz: float = float("nan")
    resolution: float = float("nan")
    n_resolution_rows: int = 0
    scan: dict | None = None
    shared_lipschitz: float | None = None

    def __str__(self) -> str:
        if self.validated_on_check_rows:
            how = (f"by held-out log-loss ({self.n_cv_rows} check rows, held out of the map"
                   f"{' by whole groups' if self.grouped else ''}, validate the candidates fitted once on the "
                   f"{self.n_rows} map rows)")
        elif self.n_splits == 1:
            how = (f"by held-out log-loss ({self.n_cv_rows} map rows validate the candidates fitted on the other "
                   f"{self.n_rows}{'; groups kept whole' if self.grouped else ''})")
        elif self.n_splits:
            how = (f"by out-of-fold log-loss ({self.n_splits}-fold{', groups kept whole' if self.grouped else ''}, "
                   f"{self.n_cv_rows} map rows)")
        else:
            how = (f"without cross-validation (too few map rows per class for {AUTO_CV_FOLDS} folds): "
                   "the first candidate that fits")
        fit = "kept as fitted" if self.n_splits == 1 else f"refitted on {self.n_rows} map rows"
        weight = (f"; the features enter at weight L_r = {self.feature_weight:.3g}, the Lipschitz constant of "
                  f"what the scores miss (p − s), estimated on {self.n_held_out} held-out rows"
                  if np.isfinite(self.feature_weight) else "")
        head = (f"metric='auto' chose the {self.chosen} scores {how}, {fit}{weight}." if self.chosen is not None else
                f"metric='auto': no candidate score model could be fitted on the {self.n_rows} map rows; "
                "the space is the standardised features alone.")
        lines = [head]
        if np.isfinite(self.resolution):
            lines.append(resolution_sentence(self.residual_lipschitz, self.resolution, self.n_resolution_rows))
        if self.scan is not None:
            lines.append(scan_sentence(self.scan))
        if self.shared_lipschitz is not None:
            lines.append(shared_raise_sentence(self.shared_lipschitz))
        for c in self.candidates:
            ll = "—" if not np.isfinite(c["log_loss"]) else f"{c['log_loss']:.4f}"
            acc = "—" if not np.isfinite(c["accuracy"]) else f"{c['accuracy']:.3f}"
            lines.append(f"  {c['name']}: log-loss {ll}, accuracy {acc}; {c['status']}")
        return "\n".join(lines)


def scan_sentence(scan: dict) -> str:
    """What ``metric="auto"``'s directional scan of the residuals looked at and found, in plain words.

    The scan (:class:`nwbound.assumptions.ResidualScan`) sorts the rows the score model never saw
    along each feature and either every plane of two features or some random directions, and
    compares the mean of what the score model misses (``1{y = c} − s_c``) between adjacent windows
    of rows, from the finest window up. Where
    that moves faster than noise alone makes it move (labels drawn from the scores), its slope
    beyond noise, doubled, can raise ``L_r``; it never lowers it.

    Parameters
    ----------
    scan : dict
        ``LearnedSpace.scan_``: ``n_directions`` (each feature, then random ones, or evenly spaced
        angles in each plane of two features), ``n_features``, ``planes`` (whether it took every
        such plane; optional, False when absent),
        ``n_rows`` (rows scanned), ``window`` (the finest window in rows; 0: too few rows),
        ``width`` (median distance between the centres of two adjacent finest windows, in std of
        the features along the direction), ``lipschitz`` (the slope beyond noise, doubled; 0 where
        nothing exceeded noise), ``raised`` (whether it raised ``L_r``) and ``n_levels`` (optional:
        the scans within the levels of features with few values, one per level scanned alone and
        one per feature whose levels are scanned together), ``local_rows`` and ``local_lipschitz``
        (optional: the sizes of the neighbourhoods of :func:`nwbound.assumptions.local_scans`, and their
        slope beyond noise, doubled) and ``local_n_rows`` (optional: the rows they read,
        :func:`nwbound.assumptions.local_scan_rows`).

    Returns
    -------
    str

    Examples
    --------
    >>> from nwbound.spaces import scan_sentence
    >>> scan = dict(n_directions=36, n_features=20, n_rows=8000, window=32, width=0.013, lipschitz=3.1, raised=True)
    >>> print(scan_sentence(scan))  # doctest: +NORMALIZE_WHITESPACE
    A scan of what the score model misses along 36 directions (each of the 20 features and 16 random
    ones), in windows as narrow as 32 of 8000 rows (about 0.013 std apart), found variation beyond
    noise: it raised L_r to 3.1.
    >>> scan.update(n_features=2, n_directions=90, local_rows=[64, 128, 256], local_lipschitz=3.1)
    >>> print(scan_sentence(scan))  # doctest: +NORMALIZE_WHITESPACE
    A scan of what the score model misses along 90 directions (2° apart in the plane of the 2
    features), in windows as narrow as 32 of 8000 rows (about 0.013 std apart), and inside
    neighbourhoods of 64, 128 and 256 rows, found variation beyond noise: it raised L_r to 3.1 (the
    scan inside neighbourhoods).
    """
    if scan["n_features"] == 2:
        which = f"{180 / scan['n_directions']:.2g}° apart in the plane of the 2 features"
    elif scan.get("planes"):
        which = f"each of the {scan['n_features']} features and 2° apart in every plane of two of them"
    else:
        n_random = scan["n_directions"] - (scan["n_features"] if scan["n_features"] > 1 else 0)
        which = f"each of the {scan['n_features']} features and {n_random} random ones"
    where = f"A scan of what the score model misses along {scan['n_directions']} directions ({which})"
    if not scan["window"]:
        return f"{where} could not run: {scan['n_rows']} rows are too few for two windows."
    where += (f", in windows as narrow as {scan['window']} of {scan['n_rows']} rows (about {scan['width']:.2g} "
              "std apart),")
    if scan.get("n_levels"):
        where += f" and within the levels of the features with few values ({scan['n_levels']} more scans),"
    local = scan.get("local_rows") or []
    if local:
        where += f" and inside neighbourhoods of {_listed(local)} rows"
        sampled = scan.get("local_n_rows", scan["n_rows"])
        where += f" (of a random {sampled} of them: the scan's budget)," if sampled < scan["n_rows"] else ","
    if scan["raised"]:
        by = " (the scan inside neighbourhoods)" if local and scan.get("local_lipschitz", 0.0) >= scan["lipschitz"] else ""
        return f"{where} found variation beyond noise: it raised L_r to {scan['lipschitz']:.3g}{by}."
    if scan["lipschitz"] > 0:
        return (f"{where} found variation beyond noise, of slope {scan['lipschitz']:.3g} per std, within L_r: "
                "L_r unchanged.")
    return f"{where} found no variation beyond noise: L_r unchanged."


def shared_raise_sentence(value: float) -> str:
    """Why a cross-fitted model's ``L_r`` is another model's raise, in plain words.

    Parameters
    ----------
    value : float
        The shared ``L_r`` (``LearnedSpace.shared_residual_lipschitz_``).

    Returns
    -------
    str

    Examples
    --------
    >>> from nwbound.spaces import shared_raise_sentence
    >>> print(shared_raise_sentence(2.5))  # doctest: +NORMALIZE_WHITESPACE
    L_r raised to 2.5, the largest raise among the cross-fitted models: their intervals are
    intersected, so each must hold, and variation one model's rows showed is assumed in every model's.
    """
    return (f"L_r raised to {value:.3g}, the largest raise among the cross-fitted models: their intervals are "
            "intersected, so each must hold, and variation one model's rows showed is assumed in every model's.")


def _listed(sizes: list) -> str:
    words = [str(int(k)) for k in sizes]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def resolution_sentence(residual_lipschitz: float, resolution: float, n_rows: int) -> str:
    """What an estimate of ``L_r`` at pilot bandwidth ``resolution`` assumes, in plain words.

    Parameters
    ----------
    residual_lipschitz : float
        ``L_r``, per standard deviation of the features.
    resolution : float
        The pilot bandwidth of the finest estimate of ``L_r``, in standard deviations of the features.
    n_rows : int
        Rows of that estimate.

    Returns
    -------
    str

    Examples
    --------
    >>> from nwbound.spaces import resolution_sentence
    >>> print(resolution_sentence(0.7, 0.3, 4000))  # doctest: +NORMALIZE_WHITESPACE
    L_r = 0.7 assumes that what the score model misses varies by at most 0.7 per std of the features,
    at scales above 0.3 std (the pilot bandwidth of its finest estimate, on 4000 rows); finer variation
    in p is not seen by this estimate or by the check.
    """
    return (f"L_r = {residual_lipschitz:.3g} assumes that what the score model misses varies by at most "
            f"{residual_lipschitz:.3g} per std of the features, at scales above {resolution:.2g} std (the pilot "
            f"bandwidth of its finest estimate, on {n_rows} rows); finer variation in p is not seen by this estimate or "
            "by the check.")


def auto_candidates(random_state: int) -> dict[str, Any]:
    """The candidate score models of ``metric="auto"``, unfitted, in order of preference.

    * ``"gradient boosting"``: ``HistGradientBoostingClassifier(max_iter=AUTO_MAX_ITER)``, a
      flexible model of interactions and monotone transforms;
    * ``"logistic regression"``: standardised features, ``LogisticRegression`` (L2, ``C = 1``),
      a stable model of a linear log-odds that needs few rows.

    Examples
    --------
    >>> from nwbound.spaces import auto_candidates
    >>> list(auto_candidates(0))
    ['gradient boosting', 'logistic regression']
    """
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler


    return {
        "gradient boosting": HistGradientBoostingClassifier(max_iter=AUTO_MAX_ITER, random_state=random_state),
        "logistic regression": make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)),
    }


def fit_score_model(model: Any, X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None, *,
                    random_state: int = 0) -> Any:
    """A fresh copy of a score model, fitted on ``(X, y)`` with ``sample_weight`` as ``metric=`` fits its map.

    ``model`` is a key of :func:`auto_candidates` (that candidate, with the same hyper-parameters)
    or an unfitted scikit-learn classifier (cloned). ``point_estimate="auto"`` fits the score
    model the space chose on every training row with it. The weights reach ``fit`` where it takes
    them (a pipeline's last step).

    Parameters
    ----------
    model : str or estimator
    X, y : ndarray
        Rows (``metric="auto"``: in their columns' units, :func:`~nwbound.spaces.in_column_units`)
        and labels.
    sample_weight : ndarray or None, default=None
    random_state : int, default=0
        Seed of the gradient-boosting candidate.

    Returns
    -------
    fitted estimator

    Raises
    ------
    ValueError
        A string that is not a candidate, naming them.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.spaces import fit_score_model
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]]); y = np.array([0, 0, 1, 1])
    >>> type(fit_score_model("logistic regression", X, y)).__name__
    'Pipeline'
    """
    from sklearn.base import clone

    if isinstance(model, str):
        candidates = auto_candidates(random_state)
        if model not in candidates:
            raise ValueError(f"fit_score_model: {model!r} is not a candidate score model; choose from {list(candidates)}.")
        model = candidates[model]
    else:
        model = clone(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence chatter, as in the choice
        return _fit(model, X, y, sample_weight)


def chosen_candidate(reports: Any) -> str | None:
    """The candidate score model that ``metric="auto"``'s reports chose: the one most of them chose
    (a cross-fitted model has one report per model), ties to the least mean held-out log-loss, then
    to :func:`auto_candidates`' order; None where none chose one.

    Parameters
    ----------
    reports : MetricAutoReport or iterable of them

    Returns
    -------
    str or None

    Examples
    --------
    >>> from nwbound.spaces import MetricAutoReport, chosen_candidate
    >>> def report(chosen, losses):
    ...     return MetricAutoReport(chosen=chosen, candidates=tuple(
    ...         dict(name=n, log_loss=v, accuracy=0.5, status="compared") for n, v in losses.items()),
    ...         n_rows=10, n_cv_rows=10, n_splits=3)
    >>> a = report("gradient boosting", {"gradient boosting": 0.30, "logistic regression": 0.40})
    >>> b = report("logistic regression", {"gradient boosting": 0.36, "logistic regression": 0.35})
    >>> chosen_candidate([a, b]), chosen_candidate(b)  # one each: the least mean log-loss
    ('gradient boosting', 'logistic regression')
    """
    reports = [reports] if isinstance(reports, MetricAutoReport) else list(reports)
    names = [r.chosen for r in reports if r is not None and r.chosen is not None]
    if not names:
        return None
    order = list(auto_candidates(0))

    def mean_loss(name: str) -> float:
        losses = [c["log_loss"] for r in reports for c in r.candidates if c["name"] == name and np.isfinite(c["log_loss"])]
        return float(np.mean(losses)) if losses else np.inf

    return min(set(names), key=lambda n: (-names.count(n), mean_loss(n), order.index(n) if n in order else len(order)))


def _fit(model: Any, X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None) -> Any:
    from sklearn.utils.validation import has_fit_parameter

    if sample_weight is not None:
        step = model.steps[-1][0] if hasattr(model, "steps") else None
        if step is not None:
            return model.fit(X, y, **{f"{step}__sample_weight": sample_weight})
        if has_fit_parameter(model, "sample_weight"):
            return model.fit(X, y, sample_weight=sample_weight)
    return model.fit(X, y)


def choose_score_model(X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None, *,
                       random_state: int = 0, groups: np.ndarray | None = None) -> tuple[Any, MetricAutoReport]:
    """The score model of ``metric="auto"``: the candidate of least out-of-fold log-loss, refitted.

    Each candidate of :func:`auto_candidates` is cross-validated on ``(X, y)``
    (:data:`AUTO_CV_FOLDS` stratified folds) and the winner refitted; above :data:`AUTO_CV_ROWS`
    rows, a stratified third validates the candidates fitted on the rest and the winner is kept
    as fitted. One that fails to fit,
    or whose refitted scores are the same on every row (e.g. gradient boosting on a few dozen
    rows), is dropped with its reason. Called on the map rows only.

    Parameters
    ----------
    X, y : ndarray
        The map rows and their labels.
    sample_weight : ndarray or None, default=None
        Passed to the refit (not to the comparison, whose log-loss is unweighted).
    random_state : int, default=0
    groups : ndarray or None, default=None
        One group label per row: the folds then keep each group whole (``StratifiedGroupKFold``),
        so that a patient's rows do not judge a model fitted on that patient's other rows. With
        fewer groups than folds, the folds ignore the groups (said in the report).

    Returns
    -------
    model : fitted estimator or None
        None when no candidate could be fitted (a ``UserWarning`` says so).
    report : MetricAutoReport

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.spaces import choose_score_model
    >>> rng = np.random.default_rng(1)
    >>> X = rng.normal(size=(30, 3)); y = (X[:, 0] > 0).astype(int)
    >>> model, report = choose_score_model(X, y, random_state=0)   # 30 rows: boosting learns nothing
    >>> report.chosen
    'logistic regression'
    """
    model, report, _, _ = _choose_score_model(X, y, sample_weight, random_state=random_state, groups=groups)
    return model, report


def _choose_score_model(X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None, *,
                        random_state: int = 0, groups: np.ndarray | None = None,
                        validation: tuple | None = None
                        ) -> tuple[Any, MetricAutoReport, np.ndarray | None, np.ndarray | None]:
    """:func:`choose_score_model`, the chosen model's scores on ``X`` (float64), :func:`_auto_scores`
    computed once for its check, and its ``predict_proba`` (float64) on the ``validation`` rows,
    computed while validating it: None when no model was chosen (the last also when ``validation``
    did not validate the candidates). :class:`~nwbound.spaces.LearnedSpace` takes them instead of
    computing the same predictions on the same rows again.

    ``validation = (X_v, y_v)``: rows held out of the map already (the check rows of
    ``lipschitz="auto"``) validate the candidates fitted once on ``X``, and the winner is kept as
    fitted: no inner cross-validation where a held-out split exists (each candidate fitted once)."""
    from sklearn.base import clone
    from sklearn.metrics import log_loss
    from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold, cross_val_predict

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    n_fit = X.shape[0]
    external = validation is not None and np.unique(validation[1]).shape[0] >= 2 and np.unique(y).shape[0] >= 2
    if external:  # the map rows, then the held-out rows: validated as the "holdout" path below
        X = np.vstack([X, np.asarray(validation[0], dtype=np.float64)])
        y = np.concatenate([y, np.asarray(validation[1])])
    cv_rows = np.arange(X.shape[0])
    labels, counts = np.unique(y[cv_rows], return_counts=True)
    n_splits = int(min(AUTO_CV_FOLDS, counts.min())) if labels.shape[0] > 1 else 0
    n_splits = n_splits if n_splits >= 2 else 0
    cv_groups = None if groups is None or external else np.asarray(groups)[cv_rows]  # check rows: whole groups already
    if cv_groups is not None and np.unique(cv_groups).shape[0] < max(n_splits, 2):
        cv_groups = None  # too few groups for the folds: rows, stratified
    candidates = auto_candidates(random_state)
    results = {name: {"name": name, "log_loss": float("nan"), "accuracy": float("nan"), "status": "compared"}
               for name in candidates}
    holdout = external or (bool(n_splits) and X.shape[0] > AUTO_CV_ROWS)
    n_splits = 1 if external else n_splits
    fitted_on_train: dict[str, Any] = {}
    validation_proba: dict[str, np.ndarray] = {}  # each candidate's predict_proba on the validation rows
    if external:
        train, cv_rows, labels = np.arange(n_fit), np.arange(n_fit, X.shape[0]), np.unique(y)
    elif holdout:
        # Many rows: one stratified third of the map rows validates models fitted on the other two
        # thirds (thousands of validation rows make the log-loss precise without more folds), and
        # the winner is kept as fitted: no refit (the speed budget).
        folds = (StratifiedKFold(3, shuffle=True, random_state=random_state) if groups is None or
                 np.unique(groups).shape[0] < 3 else StratifiedGroupKFold(3, shuffle=True, random_state=random_state))
        cv_groups = None if isinstance(folds, StratifiedKFold) else np.asarray(groups)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a class with fewer than 3 rows: it sits in some thirds only
            train, cv_rows = next(folds.split(X, y, cv_groups))
        labels = np.unique(y)
    for name, model in candidates.items():
        if not n_splits:
            continue
        entry = results[name]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # convergence chatter: the log-loss judges
                if holdout:
                    model = _fit(clone(model), X[train], y[train],
                                 None if sample_weight is None else sample_weight[train])
                    fitted_on_train[name] = model
                    proba = np.zeros((cv_rows.shape[0], labels.shape[0]))
                    predicted = np.asarray(model_proba(model, X[cv_rows]), dtype=np.float64)
                    if external:
                        validation_proba[name] = predicted
                    proba[:, np.searchsorted(labels, model.classes_)] = predicted
                else:
                    folds = (StratifiedKFold(n_splits, shuffle=True, random_state=random_state)
                             if cv_groups is None else
                             StratifiedGroupKFold(n_splits, shuffle=True, random_state=random_state))
                    proba = cross_val_predict(clone(model), X[cv_rows], y[cv_rows], groups=cv_groups,
                                              method="predict_proba", cv=folds)
            entry["log_loss"] = float(log_loss(y[cv_rows], proba, labels=labels))
            entry["accuracy"] = float(np.mean(labels[np.argmax(proba, axis=1)] == y[cv_rows]))
        except Exception as exc:  # noqa: BLE001 - any failure drops the candidate, with its reason
            entry["status"] = f"dropped: {'validation' if holdout else 'cross-validation'} failed ({type(exc).__name__}: {exc})"
    order = [n for n in candidates if not results[n]["status"].startswith("dropped")]
    if n_splits:
        order.sort(key=lambda n: results[n]["log_loss"])
    chosen, fitted, scores = None, None, None
    for name in order:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = fitted_on_train[name] if holdout else _fit(clone(candidates[name]), X, y, sample_weight)
            s = _auto_scores(model, X[:n_fit])
        except Exception as exc:  # noqa: BLE001
            results[name]["status"] = f"dropped: refit failed ({type(exc).__name__}: {exc})"
            continue
        if not np.all(np.isfinite(s)):
            results[name]["status"] = "dropped: non-finite scores"
            continue
        if n_fit > 1 and not np.any(np.ptp(s, axis=0) > 0):
            results[name]["status"] = (f"dropped: the same scores on all {n_fit} map rows (it learned "
                                       "nothing from them)")
            continue
        chosen, fitted, scores = name, model, s
        results[name]["status"] = "chosen"
        break
    report = MetricAutoReport(chosen=chosen, candidates=tuple(results[n] for n in candidates),
                              n_rows=int(train.shape[0] if holdout else X.shape[0]),
                              n_cv_rows=int(cv_rows.shape[0]), n_splits=1 if holdout else n_splits,
                              random_state=int(random_state),
                              grouped=(groups is not None) if external else cv_groups is not None,
                              validated_on_check_rows=external)
    if chosen is None:
        warnings.warn(f"{report}\nThe bounds are then those of the standardised features (as "
                      "metric='standard', on fewer rows): give more rows, or a metric of your own.",
                      UserWarning, stacklevel=caller_stacklevel())
    return fitted, report, scores, validation_proba.get(chosen) if chosen is not None else None
