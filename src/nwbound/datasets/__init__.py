"""Data sets: synthetic generators with known constants and loaders for real data.

Nothing here downloads data; the loaders read files you already have.
"""

from .gtsrb import load_gtsrb_pair
from .mnist import load_mnist
from .synthetic import SyntheticData, make_lipschitz_logistic, make_margin_clusters, make_softmax_field

__all__ = [
    "SyntheticData",
    "load_gtsrb_pair",
    "load_mnist",
    "make_lipschitz_logistic",
    "make_margin_clusters",
    "make_softmax_field",
]

try:  # written separately; the package must import before it exists
    from .mitbih import load_kaggle_csv, load_mitbih_beats, split_beats
except ImportError:  # pragma: no cover - depends on the tree state
    pass
else:
    __all__ += ["load_kaggle_csv", "load_mitbih_beats", "split_beats"]
