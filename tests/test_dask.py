"""nwbound.dask: predictions over Dask arrays and the sharded training set.

The reference for every result is the single-machine estimator on the same
data (that equality is the module's contract); a LocalCluster started here
runs the distributed cases.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
import dask  # noqa: E402
from dask.callbacks import Callback  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402
from threadpoolctl import threadpool_info  # noqa: E402

from nwbound import NadarayaWatsonClassifier, PredictionInterval, get_config  # noqa: E402
from nwbound import dask as nwdask  # noqa: E402
from nwbound.dask import ShardedNadarayaWatson  # noqa: E402
from nwbound.dask import _predict  # noqa: E402
from nwbound.dask._common import limited  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::nwbound.diagnostics.UselessBoundWarning")

FIELDS = ("proba", "lower", "upper", "epsilon", "bias", "sampling", "kappa", "n_eff", "vacuous", "bandwidth", "outside_box")


@pytest.fixture(scope="module")
def client():
    # In-process workers start in well under a second; the client is not made
    # the default so that the tests without a client really use none.
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster, distributed.Client(cluster, set_as_default=False) as c:
        yield c


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(700, 3))
    y = np.array(["a", "b", "c"])[(X[:, 0] + 0.2 * rng.normal(size=700) > 0.5).astype(int) + (X[:, 1] > 0.85)]
    w = rng.uniform(0.5, 2.0, size=700)
    Q = rng.uniform(-0.1, 1.1, size=(130, 3))  # a few queries outside the box
    return X, y, w, Q


# The band-Chernoff interval ends come from a numerical search accurate to 1e-7
# (nwbound.bounds, tol); sums rounded in another order may move them by that much.
CHERNOFF_END_TOL = 2e-7


def assert_same_interval(result: PredictionInterval, reference, *, end_tol: float = 1e-12) -> None:
    """A computed Dask interval against the estimator's: the same type, NumPy fields, equal values."""
    assert type(result) is PredictionInterval
    for name in FIELDS:
        got, expected = getattr(result, name), getattr(reference, name)
        assert isinstance(got, np.ndarray), name
        assert got.shape == expected.shape, name
        if expected.dtype == bool:
            np.testing.assert_array_equal(got, expected, err_msg=name)
        else:
            atol = end_tol if name in ("lower", "upper", "epsilon", "bias", "sampling") else 1e-12
            np.testing.assert_allclose(got, expected, rtol=1e-9, atol=atol, err_msg=name)


# -- a fitted model over dask queries ------------------------------------------------------------
@pytest.mark.parametrize("n_neighbors", [None, 15])
def test_model_over_dask_queries(client, data, n_neighbors):
    X, y, w, Q = data
    model = NadarayaWatsonClassifier(metric=None, n_neighbors=n_neighbors, bandwidth=0.3, lipschitz=1.0, n_jobs=2)
    model.fit(X, y, sample_weight=w)
    Qd = da.from_array(Q, chunks=(40, -1))  # uneven last block
    interval = nwdask.predict_interval(model, Qd, client=client)
    proba = nwdask.predict_proba(model, Qd, client=client)
    labels = nwdask.predict(model, Qd, client=client)
    interval, proba, labels = dask.compute(interval, proba, labels, scheduler=client)
    assert_same_interval(interval, model.predict_interval(Q))
    np.testing.assert_allclose(proba, model.predict_proba(Q), rtol=1e-12)
    np.testing.assert_array_equal(labels, model.predict(Q))


def test_model_over_dask_queries_several_bounds(client, data):
    X, y, w, Q = data
    model = NadarayaWatsonClassifier(metric=None, bandwidth="auto", n_neighbors=15, lipschitz=1.0).fit(X, y, sample_weight=w)
    bounds = ["hoeffding", "chernoff"]
    (result,) = dask.compute(nwdask.predict_interval(model, da.from_array(Q, chunks=(40, -1)), bounds=bounds,
                                                     client=client), scheduler=client)
    reference = model.predict_interval(Q, bounds=bounds)
    assert set(result) == set(bounds)
    for name in bounds:
        assert_same_interval(result[name], reference[name], end_tol=CHERNOFF_END_TOL if name == "chernoff" else 1e-12)
    with pytest.raises(ValueError, match="Unknown bound setting"):  # checked when the graph is built
        nwdask.predict_interval(model, da.from_array(Q, chunks=(40, -1)), bounds={"x": {"lambda": 1.0}})


class GraphRuns(Callback):
    """Counts the graph runs of Dask's local schedulers while active."""

    def __init__(self) -> None:
        super().__init__()
        self.runs = 0

    def _start(self, dsk) -> None:
        self.runs += 1


LAZY_PROPERTIES = ("certified", "error_upper", "trivial", "predicted_index")


@pytest.mark.parametrize("namespace", ["installed", "scikit-learn's copy"])
def test_lazy_interval_computes_each_block_once_and_its_properties_nothing(data, monkeypatch, namespace):
    # Round 13: the Dask result is the estimator's PredictionInterval. Its properties build on the
    # lazy fields (through the array API of dask.array: the installed array_api_compat, or the copy
    # scikit-learn ships when the dask extra is installed without it); .compute() runs every block once.
    if namespace != "installed":
        from sklearn.externals import array_api_compat

        import nwbound._namespace

        monkeypatch.setattr(nwbound._namespace, "compat", lambda: array_api_compat)
    X, y, _, Q = data
    model = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=1.0).fit(X, y)
    reference = model.predict_interval(Q)
    blocks = []
    original = _predict._interval_block

    def counted(model, block, bounds=None):
        blocks.append(block.shape[0])
        return original(model, block, bounds)

    monkeypatch.setattr(_predict, "_interval_block", counted)
    lazy = nwdask.predict_interval(model, da.from_array(Q, chunks=(40, -1)))
    with GraphRuns() as graph:
        derived = {name: getattr(lazy, name) for name in LAZY_PROPERTIES}
        picked, joined = lazy.take(np.array([129, 0])), PredictionInterval.concatenate([lazy, lazy])
        chosen = lazy.take(lazy.certified)  # rows chosen by a lazy mask: their number is unknown
        assert len(lazy) == Q.shape[0] and len(picked) == 2 and len(joined) == 2 * Q.shape[0]
        with pytest.raises(TypeError, match=r"not known until it is computed.*call \.compute\(\) first"):
            len(chosen)
        assert graph.runs == 0 and blocks == []  # nothing computed so far
        done = lazy.compute(scheduler="sync")
        assert graph.runs == 1 and sorted(blocks) == [10, 40, 40, 40]  # one pass, each block once
    assert_same_interval(done, reference)
    for name in LAZY_PROPERTIES:
        assert isinstance(derived[name], da.Array), name
        # Rounding: the estimator's blocks of queries are not the Dask blocks.
        np.testing.assert_allclose(derived[name].compute(scheduler="sync"), getattr(reference, name), rtol=1e-12,
                                   atol=1e-12, err_msg=name)
    assert_same_interval(picked.compute(scheduler="sync"), reference.take(np.array([129, 0])))
    assert_same_interval(joined.compute(scheduler="sync"), PredictionInterval.concatenate([reference, reference]))
    assert_same_interval(chosen.compute(scheduler="sync"), reference.take(reference.certified))
    assert done.compute() is done  # NumPy fields: nothing left to compute


def test_field_by_name_is_deprecated_for_one_release(data):
    # Code written for the old dict result (iv["lower"]) keeps working for one release, with a warning.
    X, y, _, Q = data
    model = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=1.0).fit(X, y)
    lazy = nwdask.predict_interval(model, da.from_array(Q, chunks=(65, -1)))
    with pytest.warns(FutureWarning, match=r"iv\['lower'\] is deprecated.*Read iv\.lower"):
        assert lazy["lower"] is lazy.lower
    with pytest.raises(KeyError, match="'eps' is not a PredictionInterval field; the fields are proba, lower"):
        lazy["eps"]
    with pytest.raises(TypeError, match=r"iv\.take\(rows\)"):  # rows are never read by position
        lazy[0]
    with pytest.raises(TypeError, match="not iterable"):  # nor is the interval a sequence of them
        iter(lazy)


def test_local_scheduler_holds_model_once(data):
    X, y, _, Q = data
    model = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=1.0).fit(X, y)
    Qd = da.from_array(Q, chunks=(13, -1))  # 10 blocks
    proba = nwdask.predict_proba(model, Qd)
    # The model (700×3 floats and more) is in one node, not in each of 10 tasks.
    graph_bytes = len(pickle.dumps(dict(proba.__dask_graph__())))
    model_bytes = len(pickle.dumps(model))
    assert graph_bytes < 2 * model_bytes
    np.testing.assert_allclose(proba.compute(scheduler="threads"), model.predict_proba(Q), rtol=1e-12)


def test_bad_queries(data):
    X, y, _, Q = data
    model = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=1.0).fit(X, y)
    with pytest.raises(ValueError, match=r"rechunk\(\{1: -1\}\)"):
        nwdask.predict(model, da.from_array(Q, chunks=(40, 2)))
    with pytest.raises(ValueError, match="dtype float32.*astype"):
        nwdask.predict_proba(model, da.from_array(Q.astype(np.float32), chunks=(40, -1)))
    with pytest.raises(ValueError, match="2 features"):
        nwdask.predict_interval(model, da.from_array(Q[:, :2], chunks=(40, -1)))
    with pytest.raises(TypeError, match="dask.array.from_array"):
        nwdask.predict(model, Q)
    with pytest.raises(NotFittedError):
        nwdask.predict(NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth="scale"), da.from_array(Q, chunks=(40, -1)))


def test_failing_task_raises(client, data):
    X, y, _, Q = data
    model = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=1.0).fit(X, y)
    bad = Q.copy()
    bad[95, 0] = np.nan  # only the third block fails
    result = nwdask.predict_interval(model, da.from_array(bad, chunks=(40, -1)), client=client)
    with pytest.raises(ValueError, match="NaN"):
        dask.compute(result, scheduler=client)
    with pytest.raises(ValueError, match="NaN"):
        nwdask.predict(model, da.from_array(bad, chunks=(40, -1))).compute(scheduler="threads")


def test_tasks_limit_blas_threads():
    def blas_threads():
        return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]

    inside = limited(blas_threads, 1)()
    assert inside and all(n == 1 for n in inside)
    # the estimators' calls inside a task run BLAS on the task's threads, not on their own 1
    assert limited(lambda: get_config()["blas_threads"], 3)() == 3
    assert get_config()["blas_threads"] == 1


# -- sharded training set -------------------------------------------------------------------------
SHARDED_CASES = [
    dict(bandwidth=0.25, lipschitz=1.0),
    dict(bandwidth="auto", lipschitz=1.0),  # the grid is built from all shards
    dict(bandwidth="scale", lipschitz=1.0),  # the k-th nearest row over all shards (scale_neighbor_rank)
    dict(bandwidth="scale", n_neighbors=30, lipschitz=1.0),  # k above SCALE_NEIGHBORS
    dict(bandwidth="auto", lipschitz=1.0, bound="chernoff", histogram_bins=8),  # histograms merge
    dict(bandwidth="auto", lipschitz=1.0, ranking_fraction=0.4),  # shards rank on the whole set's sample
    dict(bandwidth="auto", kernel="tricube", lipschitz=1.0, ranking_fraction=0.4),  # sampled exhaustive ranking
    dict(bandwidth=0.4, n_neighbors=12, lipschitz=1.0),
    dict(bandwidth=0.4, n_neighbors=12, lipschitz=1.0, bound="chernoff"),  # per-point statistics
    dict(bandwidth="auto", n_neighbors=12, margin=0.2, kernel="gaussian", bound="paper", coverage="per_class"),
    dict(bandwidth=0.3, n_neighbors=5, algorithm="kd_tree", index_params={"leaf_size": 4}, lipschitz=1.0),
]


@pytest.mark.parametrize("params", SHARDED_CASES, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()))
def test_sharded_equals_single_machine(client, data, params):
    X, y, w, Q = data
    reference = NadarayaWatsonClassifier(metric=None, **params).fit(X, y, sample_weight=w)
    # Uneven shards, one smaller than k.
    Xd = da.from_array(X, chunks=((300, 250, 8, 142), (3,)))
    Qd = da.from_array(Q, chunks=(50, -1))
    model = nwdask.ShardedNadarayaWatson(metric=None, **params).fit(Xd, y, sample_weight=w, client=client)
    np.testing.assert_array_equal(model.classes_, reference.classes_)
    np.testing.assert_allclose(model.class_prior_, reference.class_prior_, rtol=1e-12)
    np.testing.assert_allclose(model.bandwidths_, reference.bandwidths_, rtol=1e-12)
    interval, labels, proba = dask.compute(
        model.predict_interval(Qd, client=client), model.predict(Qd, client=client),
        model.predict_proba(Qd, client=client), scheduler=client,
    )
    tol = CHERNOFF_END_TOL if params.get("bound") == "chernoff" else 1e-12
    assert_same_interval(interval, reference.predict_interval(Q), end_tol=tol)
    np.testing.assert_array_equal(labels, reference.predict(Q))
    np.testing.assert_allclose(proba, reference.predict_proba(Q), rtol=1e-9, atol=1e-12)


def test_sharded_several_bounds_from_one_pass(client, data):
    X, y, w, Q = data
    params = dict(bandwidth="auto", lipschitz=1.0)
    bounds = {"hoeffding": {"bound": "hoeffding"}, "chernoff": {"bound": "chernoff"}, "tight-delta": {"delta": 0.2}}
    reference = NadarayaWatsonClassifier(metric=None, **params).fit(X, y, sample_weight=w).predict_interval(Q, bounds=bounds)
    model = nwdask.ShardedNadarayaWatson(metric=None, **params).fit(da.from_array(X, chunks=(200, -1)), y, sample_weight=w)
    (result,) = dask.compute(model.predict_interval(da.from_array(Q, chunks=(60, -1)), bounds, client=client),
                             scheduler=client)
    assert set(result) == set(bounds)
    for name in bounds:
        assert_same_interval(result[name], reference[name], end_tol=CHERNOFF_END_TOL if name == "chernoff" else 1e-12)


def test_sharded_function_local_scheduler(data):
    X, y, _, Q = data
    params = dict(bandwidth=0.3, lipschitz=1.0, empty_neighborhood="uniform")
    # Empty row chunks are dropped, not passed on as 0-row inputs.
    result = nwdask.sharded_predict_interval(
        da.from_array(Q, chunks=((65, 0, 65), (3,))), da.from_array(X, chunks=((0, 350, 350), (3,))), y, metric=None, **params
    )
    (result,) = dask.compute(result, scheduler="threads")
    assert_same_interval(result, NadarayaWatsonClassifier(metric=None, **params).fit(X, y).predict_interval(Q))


def test_sharded_proba_without_an_assumption(data):
    X, y, _, Q = data
    model = nwdask.ShardedNadarayaWatson(metric=None, lipschitz=None, bandwidth=0.3).fit(da.from_array(X, chunks=(300, -1)), y)
    reference = NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.3).fit(X, y)
    Qd = da.from_array(Q, chunks=(65, -1))
    proba, labels = dask.compute(model.predict_proba(Qd), model.predict(Qd), scheduler="threads")
    np.testing.assert_allclose(proba, reference.predict_proba(Q), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(labels, reference.predict(Q))
    with pytest.raises(ValueError, match="lipschitz"):
        model.predict_interval(Qd)


def test_sharded_parameters_are_the_estimators():
    # A thin wrapper: the estimator's names, defaults and constraints, plus threads_per_task.
    from sklearn.base import clone

    own = nwdask.ShardedNadarayaWatson().get_params()
    single = NadarayaWatsonClassifier().get_params()
    assert own == {**single, "threads_per_task": 1}
    constraints = nwdask.ShardedNadarayaWatson._parameter_constraints
    for name in single:
        assert constraints[name] is NadarayaWatsonClassifier._parameter_constraints[name], name
    model = nwdask.ShardedNadarayaWatson(bandwidth="auto", n_neighbors=7, algorithm="hnsw",
                                         index_params={"M": 8}, random_state=3, lipschitz=0.5)
    twin = clone(model)
    assert twin is not model and twin.get_params() == model.get_params()
    assert twin.set_params(delta=0.1).delta == 0.1
    with pytest.raises(TypeError, match="bandwith"):
        nwdask.ShardedNadarayaWatson(bandwith=0.3)


def test_sharded_scikit_learn_checks():
    from sklearn.utils import estimator_checks as checks

    model = nwdask.ShardedNadarayaWatson()
    for check in (checks.check_parameters_default_constructible, checks.check_no_attributes_set_in_init,
                  checks.check_get_params_invariance, checks.check_set_params, checks.check_estimator_repr,
                  checks.check_estimator_cloneable):
        check("ShardedNadarayaWatson", model)


@pytest.mark.parametrize("name,value", [("n_jobs", 2), ("device", "cuda")])
def test_sharded_refuses_what_it_cannot_honour(data, name, value):
    X, y, _, _ = data
    model = nwdask.ShardedNadarayaWatson(metric=None, lipschitz=1.0, **{name: value})
    with pytest.raises(ValueError, match=rf"cannot honour {name}=.*leave {name}=None"):
        model.fit(da.from_array(X, chunks=(350, -1)), y)


def test_sharded_checks_parameters_by_the_estimators_constraints(data):
    X, y, _, _ = data
    with pytest.raises(ValueError, match="'delta' parameter of ShardedNadarayaWatson must be a float in the range"):
        nwdask.ShardedNadarayaWatson(metric=None, lipschitz=1.0, delta=2.0).fit(da.from_array(X, chunks=(350, -1)), y)


def test_sharded_index_params_and_random_state_reach_the_shards(data):
    X, y, _, Q = data
    Xd = da.from_array(X, chunks=(350, -1))
    params = dict(bandwidth=0.4, n_neighbors=10, lipschitz=1.0, algorithm="hnsw",
                  index_params={"M": 8, "ef": 40}, random_state=5)
    model = nwdask.ShardedNadarayaWatson(metric=None, **params).fit(Xd, y)
    for shard in dask.compute(*model.shards_, scheduler="threads"):
        index = shard.model.index_
        assert (index.M, index.ef, index.random_state) == (8, 40, 5)
    Qd = da.from_array(Q, chunks=(65, -1))
    first = model.predict_interval(Qd).proba.compute(scheduler="threads")
    again = nwdask.ShardedNadarayaWatson(metric=None, **params).fit(Xd, y).predict_interval(Qd).proba.compute(scheduler="threads")
    np.testing.assert_array_equal(first, again)  # same seed, same indexes, same answers
    with pytest.raises(ValueError, match="bogus"):  # a wrong index option is passed on, and refused at fit
        nwdask.ShardedNadarayaWatson(metric=None, **{**params, "index_params": {"bogus": 1}}).fit(Xd, y)
    with pytest.raises((TypeError, ValueError), match="index_params"):
        nwdask.ShardedNadarayaWatson(metric=None, bandwidth=0.4, n_neighbors=10, index_params=[1]).fit(Xd, y)


def test_sharded_bad_input(data):
    X, y, _, Q = data
    Xd = da.from_array(X, chunks=(350, -1))
    model = nwdask.ShardedNadarayaWatson(metric=None, bandwidth=0.3, lipschitz=1.0)
    with pytest.raises(NotFittedError):
        model.predict(da.from_array(Q, chunks=(65, -1)))
    with pytest.raises(ValueError, match=r"rechunk\(\{1: -1\}\)"):
        model.fit(da.from_array(X, chunks=(350, 1)), y)
    with pytest.raises(ValueError, match="one label per row"):
        model.fit(Xd, y[:-1])
    with pytest.raises(ValueError, match="dtype float32"):
        model.fit(Xd.astype(np.float32), y)
    with pytest.raises(ValueError, match="sample_weight"):
        model.fit(Xd, y, sample_weight=-np.ones(X.shape[0]))
    with pytest.raises(ValueError, match="delta"):
        nwdask.ShardedNadarayaWatson(metric=None, bandwidth=0.3, lipschitz=1.0, delta=2.0).fit(Xd, y)
    with pytest.raises(ValueError, match="n_neighbors"):
        nwdask.ShardedNadarayaWatson(metric=None, lipschitz=1.0, n_neighbors=10_000).fit(Xd, y)
    with pytest.raises(ValueError, match="threads_per_task"):
        nwdask.ShardedNadarayaWatson(metric=None, lipschitz=1.0, threads_per_task=0).fit(Xd, y)
    model.fit(Xd, y)
    with pytest.raises(ValueError, match="dtype float32"):
        model.predict_interval(da.from_array(Q.astype(np.float32), chunks=(65, -1)))
    with pytest.raises(ValueError, match="lipschitz"):
        nwdask.ShardedNadarayaWatson(metric=None, lipschitz=None, bandwidth=0.3).fit(Xd, y).predict_interval(da.from_array(Q, chunks=(65, -1)))
    bad = X.copy()
    bad[400, 2] = np.inf
    with pytest.raises(ValueError, match="NaN or infinity"):
        model.fit(da.from_array(bad, chunks=(350, -1)), y)


@pytest.mark.parametrize("n_neighbors", [None, 9])
def test_sharded_float32_equals_single_machine_to_float32_rounding(data, n_neighbors):
    X, y, w, Q = data
    X32, Q32 = X.astype(np.float32), Q.astype(np.float32)
    params = dict(bandwidth="auto", n_neighbors=n_neighbors, lipschitz=1.0, dtype="float32")
    reference = NadarayaWatsonClassifier(metric=None, **params).fit(X32, y, sample_weight=w).predict_interval(Q32)
    model = nwdask.ShardedNadarayaWatson(metric=None, **params).fit(da.from_array(X32, chunks=(250, -1)), y, sample_weight=w)
    (result,) = dask.compute(model.predict_interval(da.from_array(Q32, chunks=(65, -1))), scheduler="threads")
    for name in ("proba", "lower", "upper", "epsilon", "kappa"):
        # Shards sum their float32 kernel values in another order than one pass does.
        np.testing.assert_allclose(getattr(result, name), getattr(reference, name), rtol=1e-4, atol=1e-5, err_msg=name)
    np.testing.assert_array_equal(result.vacuous, reference.vacuous)


def test_shared_dicts_never_meet_under_their_keys(client):
    # A fitted state is a dict: scattered as such, its keys ("X", "bandwidths_") would name the
    # futures, and two models' states would share them (seen as a flaky stale template).
    from nwbound.dask._common import share

    first = share({"bandwidths_": np.array([0.4])}, client)
    second = share({"bandwidths_": np.array([0.1, 0.2])}, client)
    assert first.key != second.key
    np.testing.assert_array_equal(first.result()["bandwidths_"], [0.4])
    np.testing.assert_array_equal(second.result()["bandwidths_"], [0.1, 0.2])


@pytest.mark.parametrize("scale", [1000.0, 1e-3])
def test_sharded_localized_neighbours_at_any_scale(client, data, scale):
    # The shards' index searches in power-of-two-scaled coordinates: asking it with raw queries
    # (as the shards once did) picked wrong neighbours whenever the data were not within [-1, 1].
    X, y, w, Q = data
    params = dict(bandwidth=0.4 * scale, n_neighbors=9, lipschitz=1.0 / scale)
    reference = NadarayaWatsonClassifier(metric=None, **params).fit(X * scale, y, sample_weight=w)
    model = nwdask.ShardedNadarayaWatson(metric=None, **params).fit(
        da.from_array(X * scale, chunks=(200, -1)), y, sample_weight=w, client=client)
    (interval,) = dask.compute(model.predict_interval(da.from_array(Q * scale, chunks=(50, -1)), client=client),
                               scheduler=client)
    assert_same_interval(interval, reference.predict_interval(Q * scale), end_tol=CHERNOFF_END_TOL)


# -- the library's default model (metric="auto", lipschitz="auto", cross-fitting) on a cluster ------
# The reference is the in-memory estimator with the same parameters on the same data: the split,
# the map and L come out the same (fitted at the client on the same rows), the kernel statistics are
# summed over the shards, so the intervals agree to rounding and the same rows are certified.
FLOAT_FIELDS = ("proba", "lower", "upper", "epsilon", "bias", "sampling", "kappa", "n_eff", "bandwidth")


@pytest.fixture(scope="module")
def field():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(1200, 2))
    y = (rng.random(1200) < 1 / (1 + np.exp(-6 * X[:, 0]))).astype(int)
    Q = rng.uniform(-1.1, 1.1, size=(150, 2))  # a few queries outside the box
    return X, y, Q


def assert_same_to_rounding(result: PredictionInterval, reference: PredictionInterval) -> None:
    """Equal to rounding (the shards sum in another order), the same flags and certified rows."""
    assert type(result) is PredictionInterval
    for name in FLOAT_FIELDS:
        # 1e-12 absolute: a lower end at 0 against 1e-13 of rounding has no relative size.
        np.testing.assert_allclose(getattr(result, name), getattr(reference, name), rtol=1e-10, atol=1e-12,
                                   err_msg=name)
    for name in ("vacuous", "outside_box"):
        np.testing.assert_array_equal(getattr(result, name), getattr(reference, name), err_msg=name)
    np.testing.assert_array_equal(result.certified, reference.certified)


CASES = {
    "default": {},  # cross-fitted below the row cap, as the estimator does by default
    "one split": {"cross_fit": False},  # the map and L on one metric share
    "features as given": {"metric": None},  # L chosen on held-out rows of the features as given
    "localized": {"n_neighbors": 40},
}


@pytest.mark.parametrize("params", CASES.values(), ids=CASES.keys())
def test_default_model_on_a_cluster_equals_in_memory(client, field, params):
    X, y, Q = field
    reference = NadarayaWatsonClassifier(point_estimate="nw", **params).fit(X, y)  # the sharded fit's estimate
    model = ShardedNadarayaWatson(**params).fit(da.from_array(X, chunks=(350, -1)), y, client=client)
    # The same split, map and L: chosen at the client on the rows the in-memory fit uses.
    assert model.lipschitz_ == reference.lipschitz_
    assert (model.cross_fit_models_ is None) == (getattr(reference, "cross_fit_models_", None) is None)
    np.testing.assert_array_equal(model.nw_rows_, reference.nw_rows_)
    if reference.metric_ is not None:
        np.testing.assert_array_equal(model.metric_.transform(Q), reference.metric_.transform(Q))
    Qd = da.from_array(Q, chunks=(64, -1))
    interval, proba, labels = dask.compute(model.predict_interval(Qd, client=client),
                                           model.predict_proba(Qd, client=client),
                                           model.predict(Qd, client=client), scheduler=client)
    expected = reference.predict_interval(Q)
    assert expected.certified.sum() > 10  # the comparison covers certified rows
    assert_same_to_rounding(interval, expected)
    np.testing.assert_allclose(proba, reference.predict_proba(Q), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(labels, reference.predict(Q))


def test_default_model_returns_the_estimators_interval_type(client, field):
    # Before round 13 the sharded estimator returned a dict of Dask arrays (a dict of such dicts
    # with bounds=); it returns the estimator's type now, lazy, computed in one pass by .compute().
    X, y, Q = field
    reference = NadarayaWatsonClassifier(point_estimate="nw").fit(X, y)
    model = ShardedNadarayaWatson().fit(da.from_array(X, chunks=(400, -1)), y, client=client)
    Qd = da.from_array(Q, chunks=(50, -1))
    lazy = model.predict_interval(Qd, client=client)
    assert type(lazy) is PredictionInterval and len(lazy) == Q.shape[0]
    assert all(isinstance(getattr(lazy, name), da.Array) for name in FIELDS)
    assert isinstance(lazy.certified, da.Array)
    assert_same_to_rounding(lazy.compute(scheduler=client), reference.predict_interval(Q))
    bounds = ["hoeffding", "chernoff"]
    several = model.predict_interval(Qd, bounds, client=client)
    assert sorted(several) == sorted(bounds) and all(type(iv) is PredictionInterval for iv in several.values())
    (computed,) = dask.compute(several, scheduler=client)  # every setting in one pass
    for name, expected in reference.predict_interval(Q, bounds=bounds).items():
        assert_same_to_rounding(computed[name], expected)


def test_sharded_default_keeps_the_kernel_estimate_inside_the_in_memory_defaults_box(client, field):
    """point_estimate="auto" (the default) needs every row at the client: the sharded fit reports the
    kernel estimate, as point_estimate="nw" in memory; the box and the certified rows are the default's."""
    X, y, Q = field
    default = NadarayaWatsonClassifier().fit(X, y)
    nw = NadarayaWatsonClassifier(point_estimate="nw").fit(X, y)
    model = ShardedNadarayaWatson().fit(da.from_array(X, chunks=(400, -1)), y, client=client)
    assert model.point_estimate == "auto" and model.point_model_ is None and default.point_model_ is not None
    (interval,) = dask.compute(model.predict_interval(da.from_array(Q, chunks=(50, -1)), client=client),
                               scheduler=client)
    assert_same_to_rounding(interval, nw.predict_interval(Q))
    expected = default.predict_interval(Q)
    np.testing.assert_allclose(interval.upper, expected.upper, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(interval.certified, expected.certified)
    assert not np.allclose(interval.proba, expected.proba)


def test_cross_fitted_models_match_one_by_one(client, field):
    X, y, Q = field
    reference = NadarayaWatsonClassifier().fit(X, y)
    model = ShardedNadarayaWatson().fit(da.from_array(X, chunks=(500, -1)), y, client=client)
    assert len(model.cross_fit_models_) == len(reference.cross_fit_models_) == 2
    for mine, theirs in zip(model.cross_fit_models_, reference.cross_fit_models_):
        assert mine.lipschitz_ == theirs.lipschitz_ and mine.delta == theirs.delta
        np.testing.assert_array_equal(mine.bandwidths_, theirs.bandwidths_)
    assert model.n_samples_fit_ == reference.n_samples_fit_
    # The whole report, the pilot's source included (one text for both: nwbound.spaces.two_constant_pilot).
    assert str(model.lipschitz_report_) == str(reference.lipschitz_report_)


def assert_same_fitted_attribute(name, mine, theirs, Q):
    """One public fitted attribute of the sharded estimator against the in-memory one's."""
    if name == "metric_" and theirs is not None:  # a fitted map: the same map of the same rows
        np.testing.assert_array_equal(mine.transform(Q), theirs.transform(Q), err_msg=name)
    elif name == "cross_fit_models_" and theirs is not None:  # the client's models hold stand-in rows
        assert len(mine) == len(theirs)
        for m, t in zip(mine, theirs):
            assert (m.lipschitz_, m.delta) == (t.lipschitz_, t.delta)
            assert str(m.lipschitz_report_) == str(t.lipschitz_report_) and str(m.metric_report_) == str(t.metric_report_)
            np.testing.assert_array_equal(m.bandwidths_, t.bandwidths_)
            np.testing.assert_array_equal(m.metric_.transform(Q), t.metric_.transform(Q))
    elif name.endswith("report_"):  # reports: their whole text
        assert type(mine) is type(theirs) and str(mine) == str(theirs), name
    elif isinstance(theirs, np.ndarray):
        np.testing.assert_array_equal(mine, theirs, err_msg=name)
    else:
        assert mine == theirs, name


# The sharded estimator's own attributes (its shards and client's models), and those of the
# in-memory one's fitted kernel sums (kernel_, bandwidth_, index_, backend_), which a cluster
# keeps on its workers: every other public fitted attribute is the in-memory estimator's.
SHARDED_ONLY = {"parts_", "estimator_", "template_", "shards_"}


@pytest.mark.parametrize("params", [{}, {"cross_fit": False}, {"metric": None}, {"n_neighbors": 40},
                                    {"metric": None, "lipschitz": 1.0}],
                         ids=["cross-fitted", "one split", "features as given", "localized", "numeric L"])
def test_sharded_fitted_attributes_are_the_in_memory_ones(client, field, params):
    X, y, Q = field
    reference = NadarayaWatsonClassifier(random_state=0, point_estimate="nw", **params).fit(X, y)
    model = ShardedNadarayaWatson(random_state=0, **params).fit(da.from_array(X, chunks=(500, -1)), y, client=client)
    names = {k for k in vars(model) if k.endswith("_") and not k.startswith("_")} - SHARDED_ONLY
    shared = sorted(k for k in names if hasattr(reference, k))
    assert {"check_rows_", "metric_report_", "lipschitz_report_", "lipschitz_", "nw_rows_"} <= set(shared)
    for name in shared:
        assert_same_fitted_attribute(name, getattr(model, name), getattr(reference, name), Q)


@pytest.mark.parametrize("params", [{}, {"cross_fit": False}, {"metric": None}],
                         ids=["cross-fitted", "one split", "features as given"])
def test_sharded_draws_a_random_state_as_in_memory(client, field, params):
    # A RandomState gives one seed per draw: the split, the pilot L and the check of L each draw
    # in memory (cross-fitted models from a copy each), and the sharded fit draws the same.
    X, y, Q = field
    reference = NadarayaWatsonClassifier(random_state=np.random.RandomState(4), point_estimate="nw", **params).fit(X, y)
    model = ShardedNadarayaWatson(random_state=np.random.RandomState(4), **params).fit(
        da.from_array(X, chunks=(500, -1)), y, client=client)
    assert model.lipschitz_ == reference.lipschitz_
    assert str(model.lipschitz_report_) == str(reference.lipschitz_report_)
    for name in ("nw_rows_", "check_rows_", "metric_rows_"):
        np.testing.assert_array_equal(getattr(model, name), getattr(reference, name), err_msg=name)
    # As many draws: the next one is the same.
    assert model.random_state.randint(2**31) == reference.random_state.randint(2**31)
    (interval,) = dask.compute(model.predict_interval(da.from_array(Q, chunks=(75, -1)), client=client),
                               scheduler=client)
    assert_same_to_rounding(interval, reference.predict_interval(Q))
    # A RandomState set after fit (another object) needs a refit, as in memory.
    with pytest.raises(ValueError, match=r"random_state=.*was set after fit.*call fit again"):
        model.set_params(random_state=np.random.RandomState(4)).predict_proba(da.from_array(Q[:5]), client=client)


def test_default_model_several_bounds_and_set_params(client, field):
    X, y, Q = field
    bounds = {"hoeffding": {"bound": "hoeffding"}, "delta=0.2": {"delta": 0.2}}
    reference = NadarayaWatsonClassifier(point_estimate="nw").fit(X, y)
    model = ShardedNadarayaWatson().fit(da.from_array(X, chunks=(400, -1)), y, client=client)
    Qd = da.from_array(Q, chunks=(75, -1))
    (several,) = dask.compute(model.predict_interval(Qd, bounds, client=client), scheduler=client)
    expected = reference.predict_interval(Q, bounds=bounds)
    for name in bounds:
        assert_same_to_rounding(several[name], expected[name])
    # A bound parameter set after fit takes effect at the next prediction, as in memory.
    model.set_params(delta=0.01)
    reference.set_params(delta=0.01)
    (one,) = dask.compute(model.predict_interval(Qd, client=client), scheduler=client)
    assert_same_to_rounding(one, reference.predict_interval(Q))
    # A parameter the fitted state depends on, even one the client's models do not hold (they are
    # one model each), needs a refit.
    for change in ({"cross_fit": False}, {"metric_fraction": 0.3}):
        name = next(iter(change))
        with pytest.raises(ValueError, match=rf"{name}=.*was set after fit.*call fit again"):
            model.set_params(**change).predict_proba(Qd, client=client)
        model.set_params(**{name: reference.get_params()[name]})


def test_default_model_with_weights_and_groups_local_scheduler(field):
    X, y, Q = field
    rng = np.random.default_rng(3)
    w = rng.uniform(0.5, 2.0, size=y.shape[0])
    groups = np.arange(y.shape[0]) // 10
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = NadarayaWatsonClassifier(cross_fit=False, point_estimate="nw").fit(X, y, sample_weight=w, groups=groups)
        model = ShardedNadarayaWatson(cross_fit=False).fit(da.from_array(X, chunks=(300, -1)), y,
                                                           sample_weight=w, groups=groups)
    np.testing.assert_array_equal(model.metric_rows_, reference.metric_rows_)
    (interval,) = dask.compute(model.predict_interval(da.from_array(Q, chunks=(50, -1))), scheduler="sync")
    assert_same_to_rounding(interval, reference.predict_interval(Q))


def test_what_a_cluster_cannot_honour_names_the_fix(field):
    from sklearn.decomposition import PCA

    X, y, _ = field
    Xd = da.from_array(X, chunks=(400, -1))
    with pytest.raises(ValueError, match=r"cannot honour metric='standard'.*metric=None"):
        ShardedNadarayaWatson(metric="standard").fit(Xd, y)
    with pytest.raises(ValueError, match=r"cannot honour metric=PCA\(\).*map_blocks"):
        ShardedNadarayaWatson(metric=PCA()).fit(Xd, y)
    with pytest.raises(ValueError, match=r"cross_fit=True.*cross_fit=False"):
        ShardedNadarayaWatson(metric=None, cross_fit=True).fit(Xd, y)


def test_sharded_split_errors_are_the_estimators():
    # One rule, one message (nwbound.spaces.check_cross_fit_metric): cross-fitting without a
    # labelled map is refused by the sharded fit with the in-memory fit's words.
    rng = np.random.default_rng(0)
    X, y = rng.uniform(-1, 1, (40, 2)), np.repeat([0, 1], 20)
    with pytest.raises(ValueError) as in_memory:
        NadarayaWatsonClassifier(metric=None, cross_fit=True).fit(X, y)
    with pytest.raises(ValueError) as sharded:
        ShardedNadarayaWatson(metric=None, cross_fit=True).fit(da.from_array(X, chunks=(10, -1)), y)
    assert str(sharded.value) == str(in_memory.value)
    assert "pass cross_fit=False" in str(sharded.value)


def test_sharded_check_split_of_one_group_names_it():
    # The metric share's map/check split (nwbound.spaces.check_rows_split) names the one group.
    from nwbound.spaces import GroupsError

    X, y = np.random.default_rng(0).uniform(-1, 1, (40, 2)), np.repeat([0, 1], 20)
    with pytest.raises(GroupsError, match=r"all belong to one group \(1\)\. Give more groups"):
        ShardedNadarayaWatson().fit(da.from_array(X, chunks=(10, -1)), y, groups=np.repeat([0, 1], 20))


def test_a_raise_in_one_model_is_every_models_on_a_cluster_too(client):
    # A thin ring (known_p_suite.ring2small): one cross-fitted model's scans raise L_r, the other's do
    # not; both fits refit that model with the raise as its floor (nwbound.spaces.shared_residual_raise).
    rng = np.random.default_rng(1)
    X = rng.uniform(-1.5, 1.5, (2000, 2))
    y = (rng.random(2000) < 0.1 + 0.8 * np.exp(-(((np.linalg.norm(X, axis=1) - 0.6) / 0.04) ** 2))).astype(int)
    reference = NadarayaWatsonClassifier(random_state=1, point_estimate="nw").fit(X, y)
    model = ShardedNadarayaWatson(random_state=1).fit(da.from_array(X, chunks=(700, -1)), y, client=client)
    assert any(m.metric_.shared_residual_lipschitz_ is not None for m in reference.cross_fit_models_)
    for mine, theirs in zip(model.cross_fit_models_, reference.cross_fit_models_):
        assert mine.lipschitz_ == theirs.lipschitz_
        assert mine.metric_.shared_residual_lipschitz_ == theirs.metric_.shared_residual_lipschitz_
        assert str(mine.metric_report_) == str(theirs.metric_report_)
    assert str(model.lipschitz_report_) == str(reference.lipschitz_report_)
    Q = rng.uniform(-1.5, 1.5, (120, 2))
    (interval,) = dask.compute(model.predict_interval(da.from_array(Q, chunks=(60, -1)), client=client),
                               scheduler=client)
    expected = reference.predict_interval(Q)  # the shards sum in another order: ends about 1e-10 apart here
    for name in ("lower", "upper", "proba"):
        np.testing.assert_allclose(getattr(interval, name), getattr(expected, name), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(interval.certified, expected.certified)
