"""Data sets the defaults were not tuned to, for ``nwbound experiment tabular --datasets ...``.

Issue 21 asks that the defaults ``metric="auto", lipschitz="auto", bandwidth="auto"`` be judged on
real sets they were not tuned to. These are the ones at hand without a download, plus
synthetic cases that stress what real tables do (a rare class, constant and duplicated columns,
more features than rows, heavy tails, many irrelevant features, many classes):

* ``mnist``: a stratified subsample of 2 000 MNIST training images, raw pixels (784 features,
  about 70 of them constant on a subsample), 10 classes; needs ``<data-dir>/mnist``;
* ``gtsrb``: the GTSRB training images of classes 6 and 14 (1 200 rows), as 16 × 16 grey levels
  (256 features: 2 × 2 blocks of the 32 × 32 RGB images averaged); needs ``<data-dir>/gtsrb``;
* ``mitbih``: 4 000 MIT-BIH beats drawn at random from all 48 records (AAMI classes N, S, V, F,
  Q; F and S rare), the first 100 samples of each beat and its 7 rhythm features; **the record is
  the group**: the folds and the classifier's own splits keep each patient on one side;
  needs ``<data-dir>/mitdb`` (reading the 48 records takes a minute or two; ``--cache-dir`` keeps
  the beats);
* ``rare_class``: 3 classes of 1 000, 900 and **10** rows (``make_classification``, 20 features);
* ``const_dup``: 10 informative-or-noise features, 5 constant columns and two copies of 5 of
  the features (25 columns, 1 000 rows);
* ``wide``: 200 rows, **500 features** (10 informative), 2 classes;
* ``heavy_tail``: 10 features through ``sinh(2x)`` (exponential tails) and 2 standard Cauchy
  noise columns, 1 500 rows;
* ``irrelevant``: 200 features of which 4 are informative, 1 500 rows;
* ``many_classes``: **15 classes**, 30 features (12 informative), 2 000 rows.

Every synthetic set is drawn with the run's seed; no constant here was chosen by looking at the
defaults' results.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["UNSEEN_DATASETS", "REAL_UNSEEN", "load_unseen"]

UNSEEN_DATASETS: dict[str, str] = {
    "mnist": "MNIST, 2 000 training images (stratified), raw pixels, 10 classes",
    "gtsrb": "GTSRB classes 6 vs 14, 1 200 training images as 16 × 16 grey levels",
    "mitbih": "MIT-BIH, 4 000 beats of all 48 records (100 samples + 7 rhythm features), groups = records",
    "rare_class": "3 classes of 1 000 / 900 / 10 rows, 20 features",
    "const_dup": "1 000 rows, 10 features + 5 constant columns + 10 duplicated columns",
    "wide": "200 rows, 500 features (10 informative), 2 classes",
    "heavy_tail": "1 500 rows, 10 features through sinh(2x) + 2 Cauchy noise columns",
    "irrelevant": "1 500 rows, 200 features (4 informative)",
    "many_classes": "2 000 rows, 15 classes, 30 features (12 informative)",
}
"""Names and one-line descriptions of the sets the defaults were not tuned to."""

REAL_UNSEEN: dict[str, str] = {"mnist": "mnist", "gtsrb": "gtsrb", "mitbih": "mitdb"}
"""The real ones, and the folder of ``--data-dir`` each one reads."""

MNIST_ROWS = 2000
MITBIH_ROWS = 4000


def _make(seed: int, **kwargs: Any) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import make_classification

    X, y = make_classification(random_state=seed, **kwargs)
    return X.astype(np.float64), y


def load_unseen(name: str, *, data_dir: Path | None = None, cache_dir: Path | None = None,
                seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """One of :data:`UNSEEN_DATASETS` as float64 features, labels and groups (None: rows are independent).

    Parameters
    ----------
    name : str
    data_dir : Path or None
        Folder holding ``mnist/``, ``gtsrb/`` and ``mitdb/`` (the real sets only).
    cache_dir : Path or None
        Where the MIT-BIH beats are cached.
    seed : int
        Seed of the subsamples and of the synthetic draws.

    Returns
    -------
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)
    groups : ndarray of shape (n,) or None

    Raises
    ------
    ValueError
        An unknown name, or a real set without ``data_dir``.

    Examples
    --------
    >>> X, y, groups = load_unseen("rare_class", seed=0)
    >>> X.shape, np.bincount(y).tolist(), groups is None
    ((1910, 20), [1000, 900, 10], True)
    >>> X, y, _ = load_unseen("const_dup", seed=0)
    >>> X.shape, int((X.std(axis=0) == 0).sum())
    ((1000, 25), 5)
    """
    if name not in UNSEEN_DATASETS:
        raise ValueError(f"Unknown data set {name!r}; choose from {', '.join(UNSEEN_DATASETS)}.")
    rng = np.random.default_rng(seed)
    if name in REAL_UNSEEN:
        if data_dir is None:
            raise ValueError(f"{name} reads files: give --data-dir, the folder that holds {REAL_UNSEEN[name]}/.")
        folder = Path(data_dir) / REAL_UNSEEN[name]
    if name == "mnist":
        from ..datasets import load_mnist

        X, y = load_mnist(folder, n_samples=MNIST_ROWS, random_state=seed)
        return X.astype(np.float64), y, None
    if name == "gtsrb":
        from ..datasets import load_gtsrb_pair

        X, y, _ = load_gtsrb_pair(folder, subset="train")
        grey = X.reshape(-1, 32, 32, 3).mean(axis=3)
        X = grey.reshape(-1, 16, 2, 16, 2).mean(axis=(2, 4)).reshape(grey.shape[0], -1)
        return X.astype(np.float64), y, None
    if name == "mitbih":
        from ..datasets import load_mitbih_beats

        beats = load_mitbih_beats(folder, cache_dir=cache_dir, progress=False)
        keep = np.sort(rng.choice(beats.y.shape[0], size=min(MITBIH_ROWS, beats.y.shape[0]), replace=False))
        X = np.hstack([beats.X[keep, :100], beats.rhythm[keep]]).astype(np.float64)
        return X, np.asarray(beats.y[keep]), np.asarray(beats.record[keep])
    if name == "rare_class":
        X, y = _make(seed, n_samples=4000, n_features=20, n_informative=6, n_redundant=2, n_classes=3,
                     weights=[0.5, 0.45, 0.05], flip_y=0.0)
        keep = np.concatenate([rng.choice(np.flatnonzero(y == c), size=k, replace=False)
                               for c, k in ((0, 1000), (1, 900), (2, 10))])
        keep = np.sort(keep)
        return X[keep], y[keep], None
    if name == "const_dup":
        X, y = _make(seed, n_samples=1000, n_features=10, n_informative=4)
        constants = np.broadcast_to(np.array([0.0, 1.0, -3.0, 7.5, 1e3]), (X.shape[0], 5))
        return np.hstack([X, constants, X[:, :5], X[:, :5]]), y, None
    if name == "wide":
        X, y = _make(seed, n_samples=200, n_features=500, n_informative=10, n_redundant=0)
        return X, y, None
    if name == "heavy_tail":
        X, y = _make(seed, n_samples=1500, n_features=10, n_informative=4)
        return np.hstack([np.sinh(2.0 * X), rng.standard_cauchy((X.shape[0], 2))]), y, None
    if name == "irrelevant":
        X, y = _make(seed, n_samples=1500, n_features=200, n_informative=4, n_redundant=0)
        return X, y, None
    X, y = _make(seed, n_samples=2000, n_features=30, n_informative=12, n_classes=15, n_clusters_per_class=1)
    return X, y, None
