"""
A review queue on real data: certificate versus confidence ranking
==================================================================

On scikit-learn's bundled breast-cancer data (569 tumours, 30 features), compare what the
per-query certificate accepts with a ranking by ``1 − max p̂`` at the same review share. The
Lipschitz constant is *estimated* (pilot-Strongin with a safety factor): the report says how
much of each bound is the assumption's bias and what L would be needed.
"""

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import MinMaxScaler

from nwbound import NadarayaWatsonClassifier
from nwbound.assumptions import estimate_lipschitz
from nwbound.diagnostics import bound_usefulness
from nwbound.metrics import review_comparison

X, y = load_breast_cancer(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.4, stratify=y, random_state=0)
scaler = MinMaxScaler().fit(X_train)
Xs_train, Xs_test = scaler.transform(X_train), np.clip(scaler.transform(X_test), 0, 1)

estimate = estimate_lipschitz(Xs_train, y_train)
print(f"estimated L = {estimate.value:.3g} (in the min-max scaled units)")

# %%
# The estimate is conservative; show the bounds at that L and at a tenth of it.
for L in (estimate.value, estimate.value / 10):
    clf = NadarayaWatsonClassifier(metric=None, n_neighbors=30, bandwidth=2.0, lipschitz=L)  # bound="chernoff" (default)
    clf.fit(Xs_train, y_train)
    iv = clf.predict_interval(Xs_test, bounds=["chernoff"])["chernoff"]  # as a setting: no warning
    print(f"\nL = {L:.3g}: {bound_usefulness(iv, beta=L)}")
    print(f"{'queue':22s} {'review':>7s} {'errors caught':>14s} {'error among accepted':>21s}  guarantee")
    for row in review_comparison(y_test, iv, clf.classes_, review_share=0.1):
        print(f"{row['queue']:22s} {row['review_share']:7.1%} {row['errors_caught']:14.1%} "
              f"{row['error_among_accepted']:21.1%}  {row['guarantee']}")
