"""The demo: fit on synthetic data with known class probabilities, print
predictions with intervals, measure coverage, write a figure. No download."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..datasets import make_lipschitz_logistic
from ..estimators import NadarayaWatsonClassifier
from ._output import atomic_write_text, format_markdown, prepare_output_dir, write_table

__all__ = ["DemoResult", "run_demo"]


@dataclass
class DemoResult:
    table: list[dict]
    coverage: list[dict]
    files: list[Path]


def _violations(true_p1: np.ndarray, proba1: np.ndarray, eps: np.ndarray) -> float:
    return float(np.mean(np.abs(true_p1 - proba1) > eps))


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
    """Run the demo and write ``predictions.csv/.md``, ``coverage.csv/.md`` and a figure.

    The data are the paper's logistic field (appendix C, L = 0.15 on
    [−10, 10]²) mapped to [0, 1]², where the true Lipschitz constant is 3.0.
    Three classifiers are compared on fresh queries with known ``p``: ours with
    the valid default bound (fixed λ = 0.2 and ``bandwidth="auto"``) and the
    paper's setting (paper bound, σ = 1/4, L = 0.15 taken in the wrong units).
    """
    out = prepare_output_dir(output, overwrite=overwrite)
    train = make_lipschitz_logistic(n_train, lipschitz=0.15, scale="box", random_state=random_state)
    rng = np.random.default_rng(random_state + 1)
    X_test = rng.random((n_queries, train.n_features))  # the scaled box is [0, 1]²
    true_p1 = train.true_proba(X_test)[:, 1]
    y_test = (rng.random(n_queries) < true_p1).astype(int)
    models = {
        "ours: hoeffding, L=3.0 (true, scaled units), λ=0.2": NadarayaWatsonClassifier(
            bandwidth=0.2, lipschitz=train.lipschitz, delta=delta
        ),
        "ours: hoeffding, L=3.0, bandwidth='auto'": NadarayaWatsonClassifier(
            bandwidth="auto", lipschitz=train.lipschitz, delta=delta
        ),
        "paper: σ=0.25, L=0.15 (raw units), λ=0.2": NadarayaWatsonClassifier(
            bandwidth=0.2, lipschitz=0.15, delta=delta, bound="paper", sigma=0.25, ck=1.0, coverage="per_class"
        ),
    }
    intervals = {}
    coverage = []
    for name, model in models.items():
        res = model.fit(train.X, train.y).predict_interval(X_test)
        intervals[name] = res
        coverage.append(
            {
                "setting": name,
                "accuracy": float(np.mean(model.classes_[res.proba.argmax(1)] == y_test)),
                "mean ε": float(res.epsilon[:, 1].mean()),
                "violation rate": _violations(true_p1, res.proba[:, 1], res.epsilon[:, 1]),
                "allowed (δ)": delta,
            }
        )
    ours = intervals[next(iter(models))]
    auto = intervals[list(models)[1]]
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
        }
        for i in range(8)
    ]
    files = list(write_table(table, out / "predictions", title="Sample predictions (bandwidth='auto')"))
    files += list(write_table(coverage, out / "coverage", title=f"Empirical coverage, δ = {delta}"))
    summary = (
        f"Training points: {n_train}, queries: {n_queries}, δ = {delta}\n\n"
        + format_markdown(table)
        + "\n\n"
        + format_markdown(coverage)
        + "\n"
    )
    files.append(atomic_write_text(out / "summary.md", summary))
    if make_figure:
        files += _figure(out, X_test, train.weights[1], true_p1, {"λ = 0.2": ours, "auto λ": auto, "paper": intervals[list(models)[2]]})
    return DemoResult(table=table, coverage=coverage, files=files)


def _figure(out: Path, X: np.ndarray, direction: np.ndarray, true_p1: np.ndarray, intervals: dict) -> list[Path]:
    from ..plots import save_figure

    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    # Project the queries on the hyperplane normal: p depends on that only.
    t = (X - 0.5) @ (np.asarray(direction) / np.linalg.norm(direction))
    order = np.argsort(t)
    fig, axes = plt.subplots(1, len(intervals), figsize=(4.2 * len(intervals), 3.4), sharey=True)
    for ax, (name, res) in zip(np.atleast_1d(axes), intervals.items()):
        ax.fill_between(t[order], res.lower[order, 1], res.upper[order, 1], alpha=0.25, label="p̂ ± ε")
        ax.plot(t[order], res.proba[order, 1], ".", ms=2, label="p̂₁")
        ax.plot(t[order], true_p1[order], "k-", lw=1.2, label="true p₁")
        ax.set_title(name)
        ax.set_xlabel("distance along w (scaled units)")
    np.atleast_1d(axes)[0].set_ylabel("probability of class 1")
    np.atleast_1d(axes)[0].legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    paths = save_figure(fig, out / "demo_intervals", overwrite=True)
    plt.close(fig)
    return list(paths)
