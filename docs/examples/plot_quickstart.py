"""
Quickstart: intervals, certificates and their coverage
======================================================

Fit the regular Nadaraya-Watson classifier on embedded synthetic data whose class
probabilities are known, predict with two bound forms from one kernel pass, and check how
often the true probability falls outside the interval.
"""

import matplotlib.pyplot as plt
import numpy as np

from nwbound import NadarayaWatsonClassifier
from nwbound.datasets import make_lipschitz_logistic

train = make_lipschitz_logistic(5000, lipschitz=0.15, n_features=1, direction=[1.0], random_state=0)
test = make_lipschitz_logistic(400, lipschitz=0.15, n_features=1, direction=[1.0], random_state=1)
L = train.lipschitz  # the true L, restated in the [0, 1] units the classifier sees

clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.08, lipschitz=L).fit(train.X, train.y)
order = np.argsort(test.X[:, 0])
both = clf.predict_interval(test.X[order], bounds=["hoeffding", "chernoff"])

# %%
# Coverage of the true class-1 probability, width and certified share.
p_true = test.proba_true[order, 1]
for name, iv in both.items():
    missed = np.mean((p_true < iv.lower[:, 1]) | (p_true > iv.upper[:, 1]))
    width = np.mean(iv.upper[:, 1] - iv.lower[:, 1])
    print(f"{name:9s} violations {missed:.3f}  mean width {width:.3f}  certified {iv.certified.mean():.2f}")

# %%
fig, ax = plt.subplots(figsize=(7, 3.5))
x = test.X[order, 0]
for (name, iv), color in zip(both.items(), ["tab:orange", "tab:blue"]):
    ax.fill_between(x, iv.lower[:, 1], iv.upper[:, 1], alpha=0.3, color=color, label=f"{name} interval")
ax.plot(x, p_true, "k-", label="true p(class 1)")
ax.plot(x, both["chernoff"].proba[:, 1], "k--", lw=1, label="estimate")
ax.set_xlabel("feature (min-max scaled)")
ax.set_ylabel("probability of class 1")
ax.set_title("Intervals of the two bound forms (δ = 0.05)")
ax.legend(loc="upper left", fontsize=8)
fig.tight_layout()
