"""The demo: fit on synthetic data with known class probabilities, print
predictions with intervals, measure coverage, write a figure. No download."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._result import PredictionInterval
from ..datasets import make_lipschitz_logistic
from ..estimators import NadarayaWatsonClassifier
from ..utils import SUMMARY_NAME, atomic_write_text, format_markdown, prepare_output_dir, write_table

__all__ = ["DemoResult", "run_demo"]

FIGURE_POINTS = 400
"""Queries on the line through the box centre drawn in the figure (smooth band edges)."""


@dataclass
class DemoResult:
    """What :func:`run_demo` computed and wrote.

    Attributes
    ----------
    table : list of dict
        Sample predictions (``bandwidth="auto"``): class-1 probability, its
        bound, the certificate and ``error_upper``.
    coverage : list of dict
        One row per setting and bound form: accuracy, mean width of the class-1
        interval, violation rate on fresh queries with known ``p``, certified
        share, mean ``error_upper``, share of trivial bounds.
    files : list of pathlib.Path
        Files written, ``summary.md`` last.
    intervals : dict
        Setting → :class:`~nwbound.PredictionInterval` on the fresh queries.
    """

    table: list[dict]
    coverage: list[dict]
    files: list[Path]
    intervals: dict[str, PredictionInterval] = field(default_factory=dict, repr=False)


def _violation(true_p1: np.ndarray, iv: PredictionInterval) -> np.ndarray:
    """Where the true class-1 probability lies outside ``[lower, upper]`` (also right for asymmetric intervals)."""
    return (true_p1 < iv.lower[:, 1]) | (true_p1 > iv.upper[:, 1])


def _settings(lipschitz: float, delta: float) -> dict[str, tuple[NadarayaWatsonClassifier, list[str] | None]]:
    """Label → (model, bound forms computed from its one kernel pass, or None for its own)."""
    return {
        f"ours, λ = 0.2, L = {lipschitz:g} (true, scaled units)": (
            NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=lipschitz, delta=delta), ["hoeffding", "chernoff"]),
        f"ours, bandwidth='auto', L = {lipschitz:g}": (
            NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=lipschitz, delta=delta), None),
        "paper: σ = 1/4, L = 0.15 (raw units), λ = 0.2": (
            NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=0.15, delta=delta, bound="paper", sigma=0.25,
                                     ck=1.0, coverage="per_class"), None),
    }


def _predict(model: NadarayaWatsonClassifier, forms: list[str] | None, X: np.ndarray) -> dict[str, PredictionInterval]:
    if forms is None:
        return {model.bound: model.predict_interval(X)}
    return dict(model.predict_interval(X, bounds=forms))


def run_demo(
    output: str | Path = "results/demo",
    *,
    n_train: int = 20_000,
    n_queries: int = 2_000,
    delta: float = 0.05,
    random_state: int = 0,
    overwrite: bool = False,
    make_figure: bool = True,
) -> DemoResult:
    """Run the demo and write ``predictions``, ``coverage`` (CSV + Markdown), a figure and ``summary.md``.

    The data are the paper's logistic field (appendix C, L = 0.15 on
    [−10, 10]²) mapped to [0, 1]², where the true Lipschitz constant is 3.0.
    Three settings are compared on fresh queries with known ``p``: ours at
    λ = 0.2 with both valid forms (Hoeffding and the tighter band-Chernoff,
    the default, from the same kernel pass) and with ``bandwidth="auto"``, and the
    paper's setting (paper bound, σ = 1/4, L = 0.15 taken in the wrong units).

    Parameters
    ----------
    output : str or path-like, default="results/demo"
        Results folder (created; refused when it holds files unless ``overwrite``).
    n_train, n_queries : int
        Training points and fresh queries.
    delta : float, default=0.05
        Failure probability of the bounds.
    random_state : int, default=0
        Seed of the data.
    overwrite : bool, default=False
        Replace demo results of the same name in a folder that holds files.
    make_figure : bool, default=True
        Write ``demo_intervals.png/.pdf`` (needs matplotlib).

    Returns
    -------
    DemoResult

    Examples
    --------
    >>> import tempfile
    >>> from nwbound.experiments.demo import run_demo
    >>> res = run_demo(tempfile.mkdtemp(), n_train=500, n_queries=50, make_figure=False)
    >>> res.files[-1].name, sorted(res.coverage[0])[:3]
    ('summary.md', ['accuracy', 'allowed (δ)', 'bound'])
    """
    out = prepare_output_dir(output, overwrite=overwrite)
    (out / SUMMARY_NAME).unlink(missing_ok=True)  # a summary only ever describes a finished run
    train = make_lipschitz_logistic(n_train, lipschitz=0.15, scale="box", random_state=random_state)
    rng = np.random.default_rng(random_state + 1)
    X_test = rng.random((n_queries, train.n_features))  # the scaled box is [0, 1]²
    true_p1 = train.true_proba(X_test)[:, 1]
    y_test = (rng.random(n_queries) < true_p1).astype(int)

    intervals: dict[str, PredictionInterval] = {}
    coverage = []
    fitted = {}
    for label, (model, forms) in _settings(train.lipschitz, delta).items():
        model.fit(train.X, train.y)
        for form, iv in _predict(model, forms, X_test).items():
            name = f"{label}, {form}" if forms else label
            fitted[name] = (model, forms and [form])
            intervals[name] = iv
            coverage.append({
                "setting": label,
                "bound": form,
                "accuracy": float(np.mean(model.classes_[iv.predicted_index] == y_test)),
                "mean width": float(np.mean(iv.upper[:, 1] - iv.lower[:, 1])),
                "mean ε": float(iv.epsilon[:, 1].mean()),
                "violation rate": float(np.mean(_violation(true_p1, iv))),
                "allowed (δ)": delta,
                "certified share": float(np.mean(iv.certified)),
                "mean error_upper": float(np.mean(iv.error_upper)),
                "trivial share": float(np.mean(iv.trivial)),
            })
    auto_name = next(n for n in intervals if "'auto'" in n)
    auto = intervals[auto_name]
    table = [
        {
            "x1": round(float(X_test[i, 0]), 3),
            "x2": round(float(X_test[i, 1]), 3),
            "true p1": round(float(true_p1[i]), 3),
            "p̂1": round(float(auto.proba[i, 1]), 3),
            "lower": round(float(auto.lower[i, 1]), 3),
            "upper": round(float(auto.upper[i, 1]), 3),
            "ε": round(float(auto.epsilon[i, 1]), 3),
            "λ (auto)": round(float(auto.bandwidth[i]), 3),
            "κ": round(float(auto.kappa[i]), 1),
            "covered": bool(auto.lower[i, 1] <= true_p1[i] <= auto.upper[i, 1]),
            "certified": bool(auto.certified[i]),
            "error_upper": round(float(auto.error_upper[i]), 3),
        }
        for i in range(min(8, n_queries))
    ]
    files = list(write_table(table, out / "predictions", title="Sample predictions (bandwidth='auto')"))
    files += write_table(coverage, out / "coverage", title=f"Empirical coverage, δ = {delta}")
    if make_figure:
        rates = {name: float(np.mean(_violation(true_p1, iv))) for name, iv in intervals.items()}
        files += _figure(out, train, fitted, rates, delta)
    summary = (
        f"# nwbound demo\n\nTraining points: {n_train}, fresh queries: {n_queries}, δ = {delta}.\n\n"
        "Certified: the predicted class's lower bound is above the other class's upper bound; "
        "error_upper = 1 − lower bound of the predicted class (a guaranteed ceiling on the chance "
        "that the prediction is wrong); trivial: every interval is [0, 1].\n\n"
        + format_markdown(table) + "\n\n" + format_markdown(coverage) + "\n"
    )
    files.append(atomic_write_text(out / SUMMARY_NAME, summary))  # last: everything it lists exists
    return DemoResult(table=table, coverage=coverage, files=files, intervals=intervals)


def _figure(out: Path, train: Any, fitted: dict, rates: dict[str, float], delta: float) -> list[Path]:
    """One panel per setting: p̂₁ and its band on a line of queries across the box, with the true p₁."""
    from ..plots import pyplot, save_figure

    # p₁ changes only along u (the gradient of the logit in scaled units): a line
    # through the box centre along u shows the whole field, and the band is smooth.
    u = (train.weights[1] - train.weights[0]) * train.scale_range
    u = u / np.linalg.norm(u)
    reach = float(np.min(0.5 / np.maximum(np.abs(u), 1e-12)))
    t = np.linspace(-reach, reach, FIGURE_POINTS)
    X_line = 0.5 + t[:, None] * u[None, :]
    true_line = train.true_proba(X_line)[:, 1]

    plt = pyplot()
    n = len(fitted)
    ncols = 2 if n > 2 else n
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols, 3.6 * nrows), sharey=True, squeeze=False)
    for ax, (name, (model, forms)) in zip(axes.flat, fitted.items()):
        iv = next(iter(_predict(model, forms, X_line).values()))
        ax.fill_between(t, iv.lower[:, 1], iv.upper[:, 1], alpha=0.25, color="C0", label="bound [lower, upper]")
        ax.plot(t, iv.proba[:, 1], color="C0", lw=1.2, label="estimate p̂₁")
        ax.plot(t, true_line, "k--", lw=1.0, label="true p₁")
        ok = rates[name] <= delta
        ax.set_title(f"{name}\nviolations {100 * rates[name]:.1f} % (δ = {100 * delta:g} %)"
                     f"{'' if ok else ' — exceeds δ'}", fontsize=8, color="k" if ok else "C3")
        ax.set_xlabel("t: distance from the box centre along ∇p₁ (scaled units)", fontsize=8)
        ax.grid(True, alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel("probability of class 1")
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    fig.suptitle("Class-1 probability and its bound on a line across the data "
                 "(violation rate measured on random fresh queries)", fontsize=9)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 1))  # room for the shared legend
    try:
        return list(save_figure(fig, out / "demo_intervals", overwrite=True))
    finally:
        plt.close(fig)
