"""Crafted model files: every value in a file is untrusted input (issue 14, item 6).

The checksum is an unkeyed SHA-256, so anyone can edit a file and re-hash it.
Each file here is edited *and re-hashed* (it passes the checksum); loading it
must either raise a ``ModelFileError`` (a ``ValueError``) naming what is wrong,
or — where the edit still describes a valid model — give valid predictions:
probabilities in [0, 1] summing to 1, ``lower ≤ proba ≤ upper``, finite ``ε``.
Never NaN, never a probability outside [0, 1], never a traceback from deep in numpy.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from nwbound import DyadicClassifier, NadarayaWatsonClassifier
from nwbound.io import ModelFileError, TableModel, load_model, save_model
from test_model_file import _read_npz, _write_npz

pytestmark = pytest.mark.filterwarnings("ignore::nwbound.diagnostics.UselessBoundWarning")

RNG = np.random.default_rng(11)
X = RNG.uniform(0.0, 1.0, size=(90, 2))
Y = (X[:, 0] > 0.5).astype(int) + (X[:, 1] > 0.7)  # three classes
W = RNG.uniform(0.5, 2.0, size=90)
Q = np.vstack([RNG.uniform(-0.2, 1.2, size=(30, 2)), [[40.0, -40.0]]])

MODELS = {
    "regular": lambda: NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=1.0).fit(X, Y, sample_weight=W),
    "regular-auto-chernoff": lambda: NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=1.0, bound="chernoff").fit(X, Y),
    "localized": lambda: NadarayaWatsonClassifier(metric=None, bandwidth=0.4, n_neighbors=9, lipschitz=1.0).fit(X, Y, sample_weight=W),
    "dyadic": lambda: DyadicClassifier(metric=None, resolution=3, lipschitz=1.0).fit(X, Y, sample_weight=W),
    "table": lambda: TableModel.fit(NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.3), X * 50.0, Y, features=["a", "b"],
                                    scale="minmax", lipschitz=0.02),
}
IS_DYADIC = {"dyadic"}


def _valid_predictions(model) -> None:
    """What a loaded model must give whatever the file said."""
    iv = model.predict_interval(Q * (50.0 if isinstance(model, TableModel) else 1.0))
    proba, lower, upper, eps = iv.proba, iv.lower, iv.upper, iv.epsilon
    for name, a in (("proba", proba), ("lower", lower), ("upper", upper), ("epsilon", eps)):
        assert np.all(np.isfinite(a)), name
        assert np.all((a >= 0.0) & (a <= 1.0)), name
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-9)
    assert np.all(lower <= proba + 1e-12) and np.all(proba <= upper + 1e-12)


def _crafted(tmp_path, name: str, edit) -> "Path":  # noqa: F821
    """Save the model, apply ``edit(meta, arrays)`` and re-hash: a file that passes the checksum."""
    path = save_model(MODELS[name](), tmp_path / f"{name}.npz", overwrite=True)
    meta, arrays = _read_npz(path)
    edit(meta, arrays)
    _write_npz(path, meta, arrays, resign=True)
    return path


def _set(member, value):
    def edit(meta, arrays):
        arrays[member] = np.asarray(value)
        meta["arrays"] = {n: {"dtype": a.dtype.str, "shape": list(a.shape)} for n, a in sorted(arrays.items())}

    return edit


def _scaled(member, factor):
    def edit(meta, arrays):
        arrays[member] = arrays[member] * factor

    return edit


def _put(member, index, value):
    def edit(meta, arrays):
        a = arrays[member].copy()
        a[index] = value
        arrays[member] = a

    return edit


def _param(key, value):
    def edit(meta, arrays):
        meta["params"][key] = value

    return edit


def _drop(member):
    def edit(meta, arrays):
        del arrays[member]

    return edit


# (edit, the field the message must name) for both kinds of estimator
COMMON = {
    "prior 5,-4": (_set("state__class_prior_", [5.0, -4.0, 0.0]), "class_prior_"),
    "prior not summing to 1": (_set("state__class_prior_", [0.2, 0.2, 0.2]), "class_prior_"),
    "prior NaN": (_put("state__class_prior_", 0, np.nan), "class_prior_"),
    "prior too short": (_set("state__class_prior_", [0.5, 0.5]), "class_prior_"),
    "prior as text": (_set("state__class_prior_", ["a", "b", "c"]), "class_prior_"),
    "one class": (_set("state__classes_", [0]), "classes_"),
    "classes 2-D": (_set("state__classes_", [[0, 1, 2]]), "classes_"),
    "classes unsorted": (_set("state__classes_", [2, 0, 1]), "classes_"),
    "classes duplicated": (_set("state__classes_", [0, 0, 1]), "classes_"),
    "n_features 0": (_set("state__n_features_in_", 0), "n_features_in_"),
    "n_features wrong": (_set("state__n_features_in_", 5), "n_features_in_|shape|n_features"),
    "n_features as float": (_set("state__n_features_in_", 2.0), "n_features_in_"),
    "missing classes": (_drop("state__classes_"), "classes_"),
    "delta 5": (_param("delta", 5.0), "delta"),
    "lipschitz -1": (_param("lipschitz", -1.0), "lipschitz"),
    "unknown bound": (_param("bound", "optimistic"), "bound"),
    "kernel object": (_param("kernel", {"name": "boxcar"}), "kernel"),
    "n_jobs 0": (_param("n_jobs", 0), "n_jobs"),
    "n_jobs text": (_param("n_jobs", "all"), "n_jobs"),
    "unknown state kind": (lambda m, a: m["state"].update(classes_="pickle"), "classes_"),
    "state kind lies": (lambda m, a: m["state"].update(n_features_in_="str"), "n_features_in_"),
    "state member missing from kinds": (lambda m, a: m["state"].pop("class_prior_"), "class_prior_"),
    "stray member": (_set("state__exec", [1]), "exec"),
}
NW = {
    "X wrong width": (_set("state__X", np.zeros((90, 3))), "'X'"),
    "X NaN": (_put("state__X", (4, 1), np.nan), "'X'"),
    "X inf": (_put("state__X", (4, 1), np.inf), "'X'"),
    "X as int": (_set("state__X", np.zeros((90, 2), dtype=np.int64)), "'X'"),
    "X outside box": (_put("state__X", (0, 0), 7.0), "box"),
    "X float32 for a float64 model": (lambda m, a: a.update(state__X=a["state__X"].astype(np.float32)), "'X'"),
    "labels out of range": (_put("state__labels", 3, 3), "labels"),
    "labels negative": (_put("state__labels", 3, -1), "labels"),
    "labels float": (lambda m, a: a.update(state__labels=a["state__labels"].astype(float)), "labels"),
    "labels short": (lambda m, a: a.update(state__labels=a["state__labels"][:-1]), "labels"),
    "bandwidth negative": (_scaled("state__bandwidths_", -1.0), "bandwidths_"),
    "bandwidth inf": (_put("state__bandwidths_", 0, np.inf), "bandwidths_"),
    "box NaN": (_put("state__box_low", 0, np.nan), "box_low"),
    "box wrong length": (_set("state__box_high", [1.0, 1.0, 1.0]), "box_high"),
}
NW_WEIGHTED = {
    "weights negative": (_put("state__weights", 0, -1.0), "weights"),
    "weights NaN": (_put("state__weights", 0, np.nan), "weights"),
    "weights all zero": (_scaled("state__weights", 0.0), "weights"),
    "weights short": (lambda m, a: a.update(state__weights=a["state__weights"][:-1]), "weights"),
}
DYADIC = {
    "class sums negative": (_scaled("state__cell_class_sums_", -1.0), "cell_class_sums_"),
    "sq sums negative": (_scaled("state__cell_sq_sums_", -1.0), "cell_sq_sums_"),
    "sq sums too large": (_scaled("state__cell_sq_sums_", 1e6), "cell_sq_sums_"),
    "weight max too large": (_scaled("state__cell_weight_max_", 1e6), "cell_weight_max_"),
    "class sums NaN": (_put("state__cell_class_sums_", (0, 0), np.nan), "cell_class_sums_"),
    "class sums for 2 classes": (lambda m, a: a.update(state__cell_class_sums_=a["state__cell_class_sums_"][:, :2]),
                                 "cell_class_sums_"),
    "keys unsorted": (lambda m, a: a.update(state__cell_keys_=a["state__cell_keys_"][::-1].copy()), "cell_keys_"),
    "keys as text": (lambda m, a: a.update(state__cell_keys_=a["state__cell_keys_"].astype(str)), "cell_keys_"),
    "keys outside the grid": (lambda m, a: a.update(state__cell_keys_=np.array([b"\xff" * 16 + b"\x01"], dtype="S17")),
                              "cell_keys_"),
    "grid span 0": (_scaled("state__grid_span", 0.0), "grid_span"),
    "grid low inf": (_put("state__grid_low", 0, -np.inf), "grid_low"),
    "resolution 99": (_param("resolution", 99), "resolution"),
}


def _cases(name: str) -> dict:
    cases = dict(COMMON)
    if name in IS_DYADIC:
        cases.update(DYADIC)
        for key in ("n_jobs 0", "n_jobs text", "kernel object"):  # not dyadic parameters
            cases.pop(key)
    else:
        cases.update(NW)
        if name in ("regular", "localized"):
            cases.update(NW_WEIGHTED)
    return cases


ALL = [(name, case) for name in MODELS for case in _cases(name)]


@pytest.mark.parametrize(("name", "case"), ALL, ids=[f"{n}:{c}" for n, c in ALL])
def test_crafted_file_is_refused_naming_the_field(tmp_path, name, case):
    edit, field = _cases(name)[case]
    path = _crafted(tmp_path, name, edit)
    with pytest.raises(ModelFileError) as err:
        load_model(path)
    message = str(err.value)
    assert str(path) in message
    assert any(f.strip("'") in message for f in field.split("|")), message


@pytest.mark.parametrize("name", sorted(set(MODELS) - IS_DYADIC))  # the dyadic classifier has no n_jobs
def test_huge_n_jobs_is_capped_not_obeyed(tmp_path, name):
    path = _crafted(tmp_path, name, _param("n_jobs", 10**6))
    model = load_model(path)
    est = model.estimator if isinstance(model, TableModel) else model
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert est.n_jobs <= cores
    _valid_predictions(model)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_random_edits_are_refused_or_harmless(tmp_path, name):
    """Seeded random edits of one value of one state member: refused, or still a valid model."""
    rng = np.random.default_rng(sum(map(ord, name)))
    path = save_model(MODELS[name](), tmp_path / "base.npz")
    meta, arrays = _read_npz(path)
    numeric = sorted(n for n, a in arrays.items() if n.startswith("state__") and a.dtype.kind in "fiu" and a.size)
    outcomes = {"refused": 0, "loaded": 0}
    for trial in range(24):
        member = numeric[rng.integers(len(numeric))]
        a = arrays[member].copy()
        flat = a.reshape(-1)
        value = rng.choice([np.nan, np.inf, -np.inf, -1.0, 0.0, 1e300, -1e-300, 3.0, 2.0**62])
        if a.dtype.kind in "iu":
            value = int(np.clip(np.nan_to_num(value, nan=-1, posinf=2**62, neginf=-(2**62)), -(2**62), 2**62))
            value = max(value, 0) if a.dtype.kind == "u" else value
        flat[rng.integers(flat.size)] = value
        edited = dict(arrays)
        edited[member] = a
        target = tmp_path / f"edit{trial}.npz"
        _write_npz(target, meta, edited, resign=True)
        try:
            model = load_model(target)
        except ModelFileError as exc:
            assert "Traceback" not in str(exc) and str(target) in str(exc)
            outcomes["refused"] += 1
            continue
        _valid_predictions(model)  # e.g. a changed (but valid) training point
        outcomes["loaded"] += 1
    assert outcomes["refused"] > 0  # the edits do reach the checks


def test_empty_neighborhood_raise_model_still_loads(tmp_path):
    """The load-time probe query must not refuse a model that raises on empty neighbourhoods."""
    est = NadarayaWatsonClassifier(metric=None, bandwidth=0.05, lipschitz=1.0, empty_neighborhood="raise").fit(X + 10.0, Y)
    loaded = load_model(save_model(est, tmp_path / "raise.npz"))
    assert loaded.empty_neighborhood == "raise"
    with pytest.raises(ValueError, match="kappa = 0"):
        loaded.predict_interval(np.zeros((1, 2)))


def test_crafted_files_never_give_probabilities_outside_unit_interval(tmp_path):
    """The issue's reproduction: class_prior_ = [5, −4] in a dyadic file, negative cell_sq_sums_."""
    X2, y2 = X[:, :1], (X[:, 0] > 0.5).astype(int)
    est = DyadicClassifier(metric=None, resolution=2, lipschitz=1.0).fit(X2, y2)
    path = save_model(est, tmp_path / "d.npz")
    meta, arrays = _read_npz(path)
    for member, value in (("state__class_prior_", np.array([5.0, -4.0])),
                          ("state__cell_sq_sums_", -arrays["state__cell_sq_sums_"])):
        _write_npz(path, meta, {**arrays, member: value}, resign=True)
        with pytest.raises(ModelFileError, match=member.removeprefix("state__")):
            load_model(path)
