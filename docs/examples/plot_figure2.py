"""
The paper's figure 2 at small n: bound width and violations against n
=====================================================================

The paper's synthetic experiment (logistic field on [−10, 10]², min-max scaled) at a few
training sizes: the mean interval width of our valid bounds, and the share of test points whose
true probability falls outside the interval, for the regular, localized and dyadic classifiers.
"""

import matplotlib.pyplot as plt
import numpy as np

from nwbound import DyadicClassifier, NadarayaWatsonClassifier
from nwbound.datasets import make_lipschitz_logistic

sizes = [300, 1000, 3000]
test = make_lipschitz_logistic(500, random_state=99, scale="box", direction=[1.0, 0.0])
models = {
    "regular": lambda L: NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=L, bound="chernoff"),
    "localized (k=50)": lambda L: NadarayaWatsonClassifier(metric=None, bandwidth=0.3, n_neighbors=50, lipschitz=L, bound="chernoff"),
    "dyadic (m=3)": lambda L: DyadicClassifier(metric=None, resolution=3, lipschitz=L, bound="chernoff"),
}
width = {name: [] for name in models}
missed = {name: [] for name in models}
for n in sizes:
    train = make_lipschitz_logistic(n, random_state=n, scale="box", direction=[1.0, 0.0])
    for name, make in models.items():
        iv = make(train.lipschitz).fit(train.X, train.y).predict_interval(test.X)
        width[name].append(np.mean(iv.upper[:, 1] - iv.lower[:, 1]))
        p = test.proba_true[:, 1]
        missed[name].append(np.mean((p < iv.lower[:, 1]) | (p > iv.upper[:, 1])))

fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
for name in models:
    axes[0].plot(sizes, width[name], "o-", label=name)
    axes[1].plot(sizes, missed[name], "o-", label=name)
axes[0].set(xscale="log", xlabel="training points n", ylabel="mean interval width", title="Width")
axes[1].axhline(0.05, color="k", ls=":", label="δ = 0.05")
axes[1].set(xscale="log", xlabel="training points n", ylabel="share of violated points", title="Violations")
axes[1].legend(fontsize=8)
fig.tight_layout()
