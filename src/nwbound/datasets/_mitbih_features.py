"""Splits of the beats (intra- and inter-patient) and the feature transforms."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import numpy as np

from ._mitbih_common import DS1, DS2, FEATURE_SETS, RHYTHM_FEATURES, BeatSet, _positive_int

if TYPE_CHECKING:  # pragma: no cover
    from sklearn.preprocessing import MinMaxScaler


def split_beats(
    beats: BeatSet,
    *,
    split: Literal["intra", "inter"] = "intra",
    test_size: float | int = 0.2,
    random_state: int | None = 0,
) -> tuple[BeatSet, BeatSet]:
    """Split beats into a training and a test set.

    Parameters
    ----------
    beats : BeatSet
        Beats to split.
    split : {"intra", "inter"}, default "intra"
        ``"intra"``: Kaggle-style beat-level stratified random split (the same
        patients on both sides; what the paper reports). ``"inter"``: de Chazal et al.
        (2004) records :data:`DS1` for training and :data:`DS2` for testing (paced
        records 102, 104, 107, 217 dropped).
    test_size : float or int, default 0.2
        Test fraction (or count) for ``"intra"``; ignored by ``"inter"``.
    random_state : int or None, default 0
        Seed of the ``"intra"`` shuffle.

    Returns
    -------
    train, test : BeatSet
        For ``"intra"`` in shuffled order; for ``"inter"`` in the input order.

    Raises
    ------
    ValueError
        Unknown ``split``, a class too small to stratify, or an empty side.

    Examples
    --------
    >>> import numpy as np
    >>> b = BeatSet(np.zeros((4, 3)), [0, 0, 1, 1], ["101", "101", "100", "100"], np.arange(4))
    >>> train, test = split_beats(b, split="inter")
    >>> sorted(set(train.record.tolist())), sorted(set(test.record.tolist()))
    (['101'], ['100'])
    """
    if not isinstance(beats, BeatSet):
        raise TypeError(f"beats must be a BeatSet, got {type(beats).__name__}")
    if split == "intra":
        from sklearn.model_selection import train_test_split

        try:
            tr, te = train_test_split(
                np.arange(len(beats)), test_size=test_size,
                random_state=random_state, stratify=beats.y,
            )  # fmt: skip
        except ValueError as exc:
            raise ValueError(
                f"cannot make a stratified split of {len(beats)} beats with "
                f"test_size={test_size!r} (class counts {beats.class_counts().tolist()}): {exc}"
            ) from exc
    elif split == "inter":
        if np.all(beats.record == "-1"):
            raise ValueError(
                "split='inter' needs record ids, but these beats have none "
                "(e.g. Kaggle CSVs): use split='intra'"
            )
        tr = np.flatnonzero(np.isin(beats.record, DS1))
        te = np.flatnonzero(np.isin(beats.record, DS2))
    else:
        raise ValueError(f"split must be 'intra' or 'inter', got {split!r}")
    for side, idx in (("training", tr), ("test", te)):
        if idx.size == 0:
            have = sorted(set(beats.record.tolist()))
            raise ValueError(
                f"split={split!r} gives an empty {side} set (records present: "
                f"{have[:10]}{' ...' if len(have) > 10 else ''})"
            )
    return beats.subset(tr), beats.subset(te)


def paper_features(
    train: BeatSet | np.ndarray,
    test: BeatSet | np.ndarray,
    n_features: int = 100,
) -> tuple[np.ndarray, np.ndarray, MinMaxScaler]:
    """Apply the paper's transform: first ``n_features`` samples, MinMax-scaled on train.

    Parameters
    ----------
    train, test : BeatSet or ndarray of shape (n, length)
        Training and test beats.
    n_features : int, default 100
        Number of leading samples to keep.

    Returns
    -------
    X_train, X_test : ndarray of shape (n, n_features)
        Scaled features (test values may leave [0, 1]).
    scaler : sklearn.preprocessing.MinMaxScaler
        The scaler fitted on the training features.

    Raises
    ------
    TypeError
        If ``n_features`` is not an int.
    ValueError
        If an input is not a non-empty (n, length) array or ``n_features`` is
        outside ``1 … length``.

    Examples
    --------
    >>> import numpy as np
    >>> Xtr, Xte, sc = paper_features(np.array([[0.0, 2.0], [1.0, 4.0]]), np.array([[0.5, 3.0]]), 2)
    >>> Xte.tolist()
    [[0.5, 0.5]]
    """
    from sklearn.preprocessing import MinMaxScaler

    Xtr = np.asarray(train.X if isinstance(train, BeatSet) else train)
    Xte = np.asarray(test.X if isinstance(test, BeatSet) else test)
    for name, X in (("train", Xtr), ("test", Xte)):
        if X.ndim != 2 or X.shape[0] == 0:
            raise ValueError(f"paper_features: {name} must be a non-empty (n, length) array")
    if isinstance(n_features, bool) or not isinstance(n_features, (int, np.integer)):
        raise TypeError(f"n_features must be an int, got {n_features!r}")
    if not 1 <= n_features <= min(Xtr.shape[1], Xte.shape[1]):
        raise ValueError(
            f"n_features must lie in 1..{min(Xtr.shape[1], Xte.shape[1])}, got {n_features}"
        )
    scaler = MinMaxScaler().fit(Xtr[:, :n_features])
    return scaler.transform(Xtr[:, :n_features]), scaler.transform(Xte[:, :n_features]), scaler


def ecg_features(
    train: BeatSet,
    test: BeatSet,
    feature_set: Literal["morphology", "rhythm", "both"] = "morphology",
    *,
    n_samples: int = 100,
    rhythm_weight: float = 1.0,
) -> tuple[np.ndarray, np.ndarray, MinMaxScaler]:
    """Build one of the feature sets, MinMax-scaled on the training side only.

    Parameters
    ----------
    train, test : BeatSet
        Training and test beats; ``"rhythm"`` and ``"both"`` need ``rhythm``
        (:func:`load_mitbih_beats` with ``rhythm=True``).
    feature_set : {"morphology", "rhythm", "both"}, default "morphology"
        ``"morphology"``: the first ``n_samples`` samples of each beat (the paper's
        features); ``"rhythm"``: the 7 :data:`RHYTHM_FEATURES`; ``"both"``: the two
        side by side (morphology columns first).
    n_samples : int, default 100
        Leading samples kept by ``"morphology"`` and ``"both"``.
    rhythm_weight : float, default 1.0
        Multiplies the scaled rhythm columns, so that 7 rhythm columns are not
        drowned by 100 morphology columns in a Euclidean distance. It is folded into
        the returned scaler, so :func:`nwbound.restate_lipschitz` restates L in the
        units the classifier sees.

    Returns
    -------
    X_train, X_test : ndarray of shape (n, d), float64
        ``X_train`` lies in [0, 1] per column (times ``rhythm_weight`` for rhythm);
        test values may leave that range.
    scaler : sklearn.preprocessing.MinMaxScaler
        Fitted on the training columns, weight included: ``scaler.transform`` of the
        raw columns gives ``X_train`` / ``X_test``.

    Raises
    ------
    ValueError
        Unknown ``feature_set``, rhythm features missing, bad ``n_samples`` or
        ``rhythm_weight``, empty input.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.datasets.mitbih import BeatSet, ecg_features, rhythm_features
    >>> rr = np.tile(rhythm_features([0, 300, 600, 1000], fs=360.0), (2, 1))
    >>> tr = BeatSet(np.random.default_rng(0).random((8, 5)), [0, 0, 1, 0] * 2, ["1"] * 8,
    ...              np.arange(8), rhythm=rr)
    >>> Xtr, Xte, sc = ecg_features(tr, tr, "both", n_samples=5, rhythm_weight=2.0)
    >>> Xtr.shape, float(Xtr[:, 5:].max())
    ((8, 12), 2.0)
    """
    from sklearn.preprocessing import MinMaxScaler

    if feature_set not in FEATURE_SETS:
        raise ValueError(f"feature_set must be one of {FEATURE_SETS}, got {feature_set!r}")
    for name, b in (("train", train), ("test", test)):
        if not isinstance(b, BeatSet):
            raise TypeError(f"ecg_features: {name} must be a BeatSet, got {type(b).__name__}")
        if len(b) == 0:
            raise ValueError(f"ecg_features: {name} holds no beats")
        if feature_set != "morphology" and b.rhythm is None:
            raise ValueError(
                f"feature_set={feature_set!r} needs rhythm features, but the {name} beats have "
                "none: load them with load_mitbih_beats(..., rhythm=True) (Kaggle CSVs have no "
                "beat times; use feature_set='morphology')"
            )
    if isinstance(rhythm_weight, bool) or not np.isfinite(rhythm_weight) or rhythm_weight <= 0:
        raise ValueError(f"rhythm_weight must be a positive number, got {rhythm_weight!r}")

    def columns(b: BeatSet) -> np.ndarray:
        parts = []
        if feature_set != "rhythm":
            parts.append(np.asarray(b.X[:, :n_samples], dtype=np.float64))
        if feature_set != "morphology":
            parts.append(np.asarray(b.rhythm, dtype=np.float64))
        return np.hstack(parts)

    if feature_set != "rhythm":
        n_samples = _positive_int(n_samples, "n_samples")
        if n_samples > min(train.X.shape[1], test.X.shape[1]):
            raise ValueError(
                f"n_samples must lie in 1..{min(train.X.shape[1], test.X.shape[1])}, got {n_samples}"
            )
    raw_tr, raw_te = columns(train), columns(test)
    scaler = MinMaxScaler().fit(raw_tr)
    if feature_set != "morphology" and rhythm_weight != 1.0:
        w = np.ones(raw_tr.shape[1])
        w[-len(RHYTHM_FEATURES):] = float(rhythm_weight)
        scaler.scale_ = scaler.scale_ * w
        scaler.min_ = scaler.min_ * w
    return scaler.transform(raw_tr), scaler.transform(raw_te), scaler
