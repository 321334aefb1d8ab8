"""Standardised logistic regression, the paper's bound-free baseline."""

from __future__ import annotations

from typing import Any

from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

__all__ = ["LogisticRegressionPipeline", "make_logistic_regression"]

# Enough for lbfgs to converge on the ECG/MNIST features (the paper's run
# stopped at the default 100 iterations, unconverged).
_DEFAULT_MAX_ITER = 5000


class LogisticRegressionPipeline(Pipeline):
    """``Pipeline(StandardScaler, LogisticRegression)`` marked as bound-free.

    A plain :class:`~sklearn.pipeline.Pipeline`; the class attribute
    ``has_bounds = False`` tells the experiment runner that it has no
    ``predict_interval`` (a class attribute, so it survives ``clone``).
    Build one with :func:`make_logistic_regression`.

    Examples
    --------
    >>> from sklearn.base import clone
    >>> model = make_logistic_regression(C=1.0)
    >>> isinstance(model, LogisticRegressionPipeline), clone(model).has_bounds
    (True, False)
    """

    has_bounds = False


def make_logistic_regression(**kwargs: Any) -> LogisticRegressionPipeline:
    """Build the logistic-regression baseline.

    Parameters
    ----------
    **kwargs
        Keyword arguments for :class:`~sklearn.linear_model.LogisticRegression`
        (e.g. ``C``, ``random_state``). ``max_iter`` defaults to 5000 so that
        the solver converges.

    Returns
    -------
    LogisticRegressionPipeline
        Unfitted ``StandardScaler`` → ``LogisticRegression`` pipeline with
        steps named ``"scale"`` and ``"logreg"``; has ``fit``, ``predict``
        and ``predict_proba``, and ``has_bounds = False``.

    Raises
    ------
    TypeError
        For a keyword that ``LogisticRegression`` does not accept.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> y = np.array([0, 0, 1, 1])
    >>> model = make_logistic_regression(random_state=0).fit(X, y)
    >>> model.predict(X).tolist(), model.has_bounds
    ([0, 0, 1, 1], False)
    >>> [name for name, _ in model.steps]
    ['scale', 'logreg']
    """
    known = set(LogisticRegression().get_params())
    unknown = sorted(set(kwargs) - known)
    if unknown:
        raise TypeError(
            f"make_logistic_regression: unknown LogisticRegression parameter(s) "
            f"{unknown}; valid ones are {sorted(known)}."
        )
    kwargs.setdefault("max_iter", _DEFAULT_MAX_ITER)
    return LogisticRegressionPipeline(
        [("scale", StandardScaler()), ("logreg", LogisticRegression(**kwargs))]
    )
