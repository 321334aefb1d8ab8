"""The ranked choice of ``bandwidth="auto"``: one copy for every backend (``nwbound.engine._ranking``).

The rule (each query's λ of least label-free ε, one choice per choosing setting, the queries
grouped by chosen λ) is written once against the arrays' namespace: NumPy on the host, the
device's tensors where they live (here ``array_api_strict`` stands in for a device namespace).
"""

from __future__ import annotations

import numpy as np
import pytest

from nwbound import NadarayaWatsonClassifier
from nwbound.bounds import BoundSpec
from nwbound.engine import BandwidthRanking, choice_groups, choose_bandwidths, rows_by_choice
from nwbound.engine.host._backend import rows_by_bandwidth

HOEFFDING = BoundSpec(form="hoeffding", beta=1.0, delta_prime=0.05)
CHERNOFF = BoundSpec(form="chernoff", beta=1.0, delta_prime=0.05)
STEEP = BoundSpec(form="hoeffding", beta=50.0, delta_prime=0.05)


def _ranking(xp=np, n=40, seed=0) -> BandwidthRanking:
    rng = np.random.default_rng(seed)
    kappa = rng.uniform(0.5, 30.0, (n, 5))
    sq, dist = kappa * rng.uniform(0.1, 1.0, (n, 5)), kappa * rng.uniform(0.01, 1.0, (n, 5))
    kappa[:3] = 0.0  # no mass at any λ: the last column
    return BandwidthRanking(*(xp.asarray(a) for a in (kappa, sq, dist)), np.linspace(0.1, 1.0, 5)[None, :])


def test_settings_that_choose_alike_share_one_choice_and_keep_their_order():
    r = _ranking()
    specs = {"h": HOEFFDING, "s": STEEP, "c": CHERNOFF}
    groups = choice_groups(specs, r)
    want = choose_bandwidths(r, specs)
    assert not np.array_equal(want["h"], want["s"])  # the data separate the two β
    # hoeffding and chernoff share their parts: one group, names in the settings' order
    assert [names for _, names in groups] == [["h", "c"], ["s"]]
    for choice, names in groups:
        for name in names:
            np.testing.assert_array_equal(choice, want[name])


def test_numpy_choices_that_agree_share_a_group_whatever_their_setting():
    # One query whose ε is least at the widest λ for every β: two settings, one exact pass.
    r = BandwidthRanking(np.array([[1.0, 40.0]]), np.array([[1.0, 40.0]]), np.array([[0.5, 1.0]]),
                         np.array([[0.1, 0.5]]))
    groups = choice_groups({"s": STEEP, "h": HOEFFDING, "c": CHERNOFF}, r)
    assert len(groups) == 1 and groups[0][1] == ["s", "h", "c"] and groups[0][0].tolist() == [1]


def test_device_choices_stay_where_they_live_and_equal_the_hosts():
    xs = pytest.importorskip("array_api_strict")
    host, dev = _ranking(), _ranking(xs)
    specs = {"h": HOEFFDING, "c": CHERNOFF, "s": STEEP}
    want = choose_bandwidths(host, specs)
    got = choice_groups(specs, dev)
    assert [names for _, names in got] == [["h", "c"], ["s"]]
    for choice, names in got:
        assert not isinstance(choice, np.ndarray)  # no read to compare choices on a device
        for name in names:
            np.testing.assert_array_equal(np.asarray(choice), want[name])


def test_the_route_computes_one_choice_per_choosing_setting(monkeypatch):
    # Regression: the host computed a choice per bound name, then compared them; hoeffding and
    # chernoff share their parts, so the route computes one.
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 2)); y = (X[:, 0] > 0).astype(int)
    clf = NadarayaWatsonClassifier(metric=None, lipschitz=1.0).fit(X, y)
    calls = []
    real = BoundSpec.least_epsilon
    monkeypatch.setattr(BoundSpec, "least_epsilon", staticmethod(lambda *a: calls.append(1) or real(*a)))
    both = clf.predict_interval(X[:20], bounds=["hoeffding", "chernoff"])
    assert len(calls) == 1
    for name in ("hoeffding", "chernoff"):
        alone = NadarayaWatsonClassifier(metric=None, lipschitz=1.0, bound=name).fit(X, y).predict_interval(X[:20])
        np.testing.assert_array_equal(both[name].bandwidth, alone.bandwidth)
        np.testing.assert_array_equal(both[name].lower, alone.lower)


@pytest.mark.parametrize("namespace", ["numpy", "array_api_strict", "torch"])
def test_rows_by_choice_groups_in_order_and_restores_it(namespace):
    xp = np if namespace == "numpy" else pytest.importorskip(namespace)  # torch: its index_add count
    rng = np.random.default_rng(5)
    choice = rng.integers(0, 7, 300)
    choice[choice == 3] = 4  # an unused bandwidth
    rows, used, inverse = rows_by_choice(xp.asarray(choice), 8)
    assert used == sorted(set(choice.tolist()))
    for g, r in zip(used, rows):
        assert np.asarray(r).tolist() == np.flatnonzero(choice == g).tolist()
    assert np.array_equal(np.concatenate([np.asarray(r) for r in rows])[np.asarray(inverse)], np.arange(300))
    for dtype in (np.int64, np.int32, np.uint64):  # kernel_statistics(bandwidth_index=) takes any int dtype
        host_rows, host_used = rows_by_bandwidth(choice.astype(dtype))
        assert host_used.tolist() == used and all(np.array_equal(a, np.asarray(b)) for a, b in zip(host_rows, rows))


def test_from_sums_restates_units_exactly_and_factors_of_one_change_nothing():
    r = _ranking()
    same = BandwidthRanking.from_sums(r.kappa, r.sq_sum, r.dist_sum, r.bandwidth)
    for name in ("kappa", "sq_sum", "dist_sum"):
        np.testing.assert_array_equal(getattr(same, name), getattr(r, name))
    # Powers of two are exact: weights in units of 2⁻³, distances of 2⁵, a quarter of the rows.
    moved = BandwidthRanking.from_sums(r.kappa, r.sq_sum, r.dist_sum, r.bandwidth, fraction=0.25,
                                       weight_unit=2.0**-3, feature_unit=2.0**5)
    np.testing.assert_array_equal(moved.kappa, r.kappa * 2.0**-1)
    np.testing.assert_array_equal(moved.sq_sum, r.sq_sum * 2.0**-4)
    np.testing.assert_array_equal(moved.dist_sum, r.dist_sum * 2.0**4)


def test_least_epsilon_ties_are_exact_and_no_mass_takes_the_widest():
    bias = np.array([[0.3, 0.3, 0.3], [0.2 + 1e-15, 0.2, 0.5], [np.inf, np.inf, np.inf], [np.inf, 0.4, 0.4]])
    sampling = np.zeros_like(bias)
    assert BoundSpec.least_epsilon(bias, sampling).tolist() == [0, 1, 2, 1]
