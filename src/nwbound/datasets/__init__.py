"""Data sets: synthetic generators with known constants and loaders for real data.

The loaders read files you already have; only ``load_mitbih_beats(...,
download=True)`` fetches data, and only when asked.
"""

from ._common import stratified_subsample
from .gtsrb import load_gtsrb_pair
from .mitbih import (
    FEATURE_SETS,
    RHYTHM_FEATURES,
    BeatSet,
    ecg_features,
    load_kaggle_csv,
    load_mitbih_beats,
    load_mitbih_signal,
    paper_features,
    rhythm_features,
    split_beats,
)
from .mnist import load_mnist
from .synthetic import SyntheticData, make_lipschitz_logistic, make_margin_clusters, make_softmax_field

__all__ = [
    "FEATURE_SETS",
    "RHYTHM_FEATURES",
    "BeatSet",
    "ecg_features",
    "load_mitbih_signal",
    "rhythm_features",
    "SyntheticData",
    "load_gtsrb_pair",
    "load_kaggle_csv",
    "load_mitbih_beats",
    "load_mnist",
    "make_lipschitz_logistic",
    "make_margin_clusters",
    "make_softmax_field",
    "paper_features",
    "split_beats",
    "stratified_subsample",
]
