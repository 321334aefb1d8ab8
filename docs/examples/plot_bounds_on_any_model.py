"""
Bounds on top of any model
==========================

You already have a classifier you trust. This example puts per-query bounds on top of it: the
model's **scores** become the space in which the Nadaraya-Watson classifier measures distance, so
its kernel sums pool the training rows the model finds alike. It then compares the result with
two marginal peers from MAPIE on the same rows: split-conformal prediction sets and Venn-ABERS
probability intervals.

The recipe is one argument, ``metric=``: give the classifier *your* model, unfitted. It splits
the training rows (stratified) into a metric share **M**, on which your model is fitted, and an NW
share **N**, the only rows in the kernel sums. Given M, N's labels are independent of the space,
so the bound holds under one assumption, stated per query:
``|p_c(x) − p_c(x′)| ≤ L·‖z(x) − z(x′)‖``, with ``z`` your model's standardized scores. This
says the scores are *sufficient* for the class probabilities and that these move smoothly with
them. It is a different claim from a marginal guarantee: split conformal and Venn-ABERS need no
such assumption, but their promise holds on average over queries drawn like the calibration
rows, not for each query. (A model you already fitted enters as
``sklearn.frozen.FrozenEstimator(model)``; it must not have seen the labels of the rows you fit
the classifier on.)
"""

import numpy as np
from mapie.calibration import VennAbersCalibrator
from mapie.classification import SplitConformalClassifier
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import train_test_split

from nwbound import NadarayaWatsonClassifier
from nwbound.plots import RiskCoverageDisplay, pyplot

DELTA = 0.05
X, y = load_breast_cancer(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)

# %%
# Your model as the space
# -----------------------
# ``lipschitz="auto"`` splits the metric share once more: 60 % of it fits your model and gives a
# pilot estimate of L, the other 40 % is a held-out check that rejects any L under which
# certified predictions err more often than their error ceilings allow. The smallest L on the
# grid that the check does not reject is used: an assumption consistent with held-out data, not a
# certified fact. No row in the kernel sums takes part in choosing it.
your_model = HistGradientBoostingClassifier(random_state=0)
nw = NadarayaWatsonClassifier(metric=your_model, lipschitz="auto", bandwidth="auto", delta=DELTA, random_state=0)
nw.fit(X_train, y_train)
N = nw.nw_rows_  # the rows in the kernel sums
model = nw.metric_.map_  # your model, fitted on the map rows of the metric share
print(f"{nw.metric_rows_.size} rows in the metric share ({nw.check_rows_.size} of them check L), "
      f"{N.size} in the kernel sums")
print(nw.lipschitz_report_)
print(f"\nyour model's accuracy on the test rows: {model.score(X_test, y_test):.3f}")

iv = nw.predict_interval(X_test)
pred = nw.classes_[iv.predicted_index]
wrong = pred != y_test
cert = iv.certified
print(f"NW accuracy {1 - wrong.mean():.3f}; certified: {cert.mean():.1%} of the test rows, "
      f"{wrong[cert].sum()} errors among them; their error ceilings sum to {iv.error_upper[cert].sum():.1f} "
      f"(mean {iv.error_upper[cert].mean():.3f})")

# %%
# The marginal peers on the same split: model on M, calibration on N
# -------------------------------------------------------------------
X_n, y_n = X_train[N], y_train[N]
conformal = SplitConformalClassifier(model, confidence_level=1 - DELTA, prefit=True).conformalize(X_n, y_n)
_, sets = conformal.predict_set(X_test)
sets = sets[:, :, 0]
single = sets.sum(axis=1) == 1
set_wrong = ~sets[np.arange(y_test.size), y_test]
print(f"split conformal (95 %): {single.mean():.1%} singleton sets, "
      f"{set_wrong[single].mean():.1%} error among them; marginal coverage {1 - set_wrong.mean():.1%}")

with np.errstate(divide="ignore", invalid="ignore"):  # MAPIE divides 0 by 0 on tied scores (harmless)
    venn = VennAbersCalibrator(estimator=model, cv="prefit").fit(X_n, y_n)
    p_va, p0_p1 = venn.predict_proba(X_test, p0_p1_output=True)
width_va = p0_p1[:, 1] - p0_p1[:, 0]
print(f"Venn-ABERS: mean width of [p0, p1] {width_va.mean():.3f}; "
      f"accuracy of its calibrated p {np.mean(venn.classes_[p_va.argmax(axis=1)] == y_test):.3f}")
print(f"NW bound: mean width of the class-1 interval {np.mean(iv.upper[:, 1] - iv.lower[:, 1]):.3f}")

# %%
# Per query, and as a review queue
# --------------------------------
# Left: the class-1 interval of each test row, NW bound (grey) next to Venn-ABERS's
# ``[p0, p1]`` (orange), rows sorted by the NW estimate. Venn-ABERS's interval is narrow but its
# validity is marginal; the bound is wider and per query. Right: the error among the predictions
# kept when the most doubtful are sent to review first, ranked by the bound's error ceiling or by
# ``1 − max p̂``, with the certified predictions and the conformal singletons as single points.
order = np.argsort(iv.proba[:, 1])
fig, (ax0, ax1) = pyplot().subplots(1, 2, figsize=(10, 4))
rank = np.arange(order.size)
ax0.fill_between(rank, iv.lower[order, 1], iv.upper[order, 1], color="0.8", label="NW bound (per query)")
ax0.plot(rank, iv.proba[order, 1], color="k", lw=1, label="NW p̂")
ax0.vlines(rank, p0_p1[order, 0], p0_p1[order, 1], color="C1", lw=1, alpha=0.8, label="Venn-ABERS [p0, p1]")
ax0.set(xlabel="test rows, sorted by NW p̂", ylabel="P(class 1 | x)", ylim=(0, 1))
ax0.legend(loc="upper left", fontsize=8)
disp = RiskCoverageDisplay.from_arrays(
    y_test, [pred, pred, model.predict(X_test)],
    [iv.error_upper, 1 - iv.proba.max(axis=1), 1 - model.predict_proba(X_test).max(axis=1)],
    label=["NW: error_upper", "NW: 1 − max p̂", "model: 1 − max p̂"], ax=ax1)
disp.add_point(cert.mean(), wrong[cert].mean(), label="NW: certified")
disp.add_point(single.mean(), set_wrong[single].mean(), label="conformal singletons", marker="s")
ax1.legend(fontsize=8, loc="upper left")
fig.tight_layout()
