"""A slow, per-query re-statement of the estimator and its bounds, written from
the formulas in shared/notes/bounds.md and the paper — independent of the
library's helpers (it only shares the kernel *definitions* written out here)."""

import math

import numpy as np

PROFILES = {
    "epanechnikov": (lambda u: max(0.0, 1.0 - u * u), 1.0),
    "boxcar": (lambda u: 1.0 if u <= 1.0 else 0.0, 1.0),
    "tricube": (lambda u: (1 - u**3) ** 3 if u < 1 else 0.0, 1.0),
    "gaussian": (lambda u: math.exp(-u * u / 2) if u <= 3.0 else 0.0, 3.0),
    "gaussian_untruncated": (lambda u: math.exp(-u * u / 2), math.inf),
}


def reference_query(y, X, labels, n_classes, kernel, lam, weights=None, neighbors=None):
    """Return (class_sums, kappa, S2, D, tail) for one query by an explicit loop."""
    profile, _ = PROFILES[kernel]
    n = X.shape[0]
    w = np.ones(n) if weights is None else weights
    members = range(n) if neighbors is None else neighbors
    class_sums = np.zeros(n_classes)
    s2 = d = tail = 0.0
    for i in members:
        dist = math.sqrt(sum((a - b) ** 2 for a, b in zip(y, X[i])))
        k = w[i] * profile(dist / lam)
        class_sums[labels[i]] += k
        s2 += k * k
        d += k * dist
        if dist > 3.0 * lam:
            tail += k
    return class_sums, class_sums.sum(), s2, d, tail


def reference_epsilon(form, kappa, s2, d, tail, *, beta, delta_prime, sigma=0.5, ck=1.0,
                      lam=1.0, radius=1.0, diameter=None):
    """ε for one query (inf where κ = 0)."""
    if kappa <= 0:
        return math.inf
    if form == "hoeffding":
        return beta * d / kappa + math.sqrt(math.log(2 / delta_prime) * s2 / 2) / kappa
    if form == "selfnormalized":
        v = s2
        return beta * d / kappa + sigma * math.sqrt(2 * (1 + v) * math.log(math.sqrt(1 + v) / delta_prime)) / kappa
    if form == "paper":
        ks = kappa / ck
        if ks > 1:
            alpha = math.sqrt(ks * math.log(math.sqrt(1 + ks) / delta_prime))
        else:
            alpha = math.sqrt(math.log(math.sqrt(2) / delta_prime))
        if math.isfinite(radius):
            bias = beta * radius * lam
        else:
            bias = beta * (3.0 * lam + diameter * tail / kappa)
        return bias + 2 * sigma * alpha / ks
    raise ValueError(form)
