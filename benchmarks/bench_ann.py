"""Approximate (HNSW, IVF, NN-descent) against exact neighbour search for the localized classifier.

On ECG-shaped data (default: 87 554 training rows × 100 features, 21 892
queries, k = 10, 5 imbalanced classes) this prints, for each index, the build
time, the time to search all queries, recall@k against the exact neighbours
and the share of queries whose localized-NWC predicted class equals the one
the exact index gives. The data are a synthetic stand-in with a low intrinsic
dimension (beats vary along a few latent directions): a smooth random map of
a ``--latent``-dimensional mixture into ``[0, 1]^d`` plus small noise.

Approximate backends (``--backends``, comma-separated, default ``hnswlib``):

* ``hnswlib`` — :class:`nwbound.neighbors.HNSWIndex` (``algorithm="hnsw"``),
  ``--M``/``--ef-construction``, searched with the ``ef_`` it chose at fit time
  for ``--recall`` (row ``ef=tuned N``) and at each ``--ef``;
* ``faiss`` — ``faiss.IndexHNSWFlat`` (``--faiss-M``, ``--faiss-ef-construction``,
  searched at each ``--faiss-ef``) and, unless ``--ivf-nlist 0``,
  ``faiss.IndexIVFFlat`` (``--ivf-nlist`` lists, searched at each ``--ivf-nprobe``);
* ``pynndescent`` — ``NNDescent(X, n_neighbors=--pynnd-neighbors)`` then
  ``prepare()``, searched at each ``--pynnd-epsilon``.

Each optional library is imported only when asked for; a missing one is
reported as skipped. Every backend goes through the same
:class:`~nwbound.neighbors.NeighborIndex` wrapper work as ``HNSWIndex``
(float64 distances recomputed for the returned rows, stable sort), so query
times are what the classifier would pay. Query timings run in ``--repeats``
interleaved rounds (the order of the settings rotates each round) so that
machine load hits all backends alike; the table reports medians. Build times
are single builds; pynndescent's numba compilation is paid by a small warm-up
build first and reported separately.

``--crossover`` instead measures where ``algorithm="auto"`` should switch from
exact search to HNSW: build (ef choice included) plus queries against exact
fit plus queries, for training sizes ``--sizes``, dimensions ``--dims`` and
queries = n/4 and = n (``--query-ratios``), in wall and CPU seconds
(see :data:`nwbound.neighbors.AUTO_HNSW_RULE`).

Usage::

    PYTHONPATH=src python benchmarks/bench_ann.py --crossover --threads 1 [--sizes 20000 40000 80000] [--dims 100 4]
    PYTHONPATH=src python benchmarks/bench_ann.py [--n 87554] [--queries 21892] [--recall 0.99]
        [--M 16] [--ef 32 64 128 256] [--threads 1] [--knn-algorithm auto] [--skip-exact-trees]
        [--parallel-build] [--noise 0.01] [--ecg ../shared/data/mitdb]
        [--backends hnswlib,faiss,pynndescent] [--repeats 3] [--target-recall 0.999]

Targets: all queries in <= 0.6 s at recall@k >= 0.999 and >= 99.5 % agreement.
"""

from __future__ import annotations

import argparse
import importlib
import os
import time
from typing import Any, Callable

import numpy as np
from sklearn.neighbors import KNeighborsClassifier, NearestNeighbors
from threadpoolctl import threadpool_limits

from nwbound import NadarayaWatsonClassifier
from nwbound.neighbors import HNSWIndex, NeighborIndex

BACKENDS = ("hnswlib", "faiss", "pynndescent")
# Queries per block when recomputing float64 distances (as HNSWIndex does).
_DISTANCE_BLOCK = 2048


def ecg_like(n: int, n_features: int, latent: int, seed: int, noise: float = 0.01) -> tuple[np.ndarray, np.ndarray]:
    """Rows in [0, 1]^d on a smooth ``latent``-dim manifold, labels with ECG class shares."""
    rng = np.random.default_rng(seed)
    shares = np.array([0.828, 0.025, 0.066, 0.007, 0.074])  # N, S, V, F, Q
    y = rng.choice(shares.size, size=n, p=shares)
    centres = rng.normal(scale=1.5, size=(shares.size, latent))
    z = centres[y] + rng.normal(size=(n, latent))
    # A smooth nonlinear map to d features (random Fourier features), then [0, 1].
    W = rng.normal(scale=0.5, size=(latent, n_features))
    b = rng.uniform(0, 2 * np.pi, size=n_features)
    X = 0.5 + 0.5 * np.sin(z @ W + b) + rng.normal(scale=noise, size=(n, n_features))
    return np.clip(X, 0.0, 1.0), y


def recall_at_k(found: np.ndarray, exact: np.ndarray) -> float:
    """Share of the exact k neighbours (per query) that were found."""
    k = exact.shape[1]
    hits = (found[:, :, None] == exact[:, None, :]).any(axis=1).sum()
    return float(hits) / (exact.shape[0] * k)


def timed(fn, *args, repeat: int = 1):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn(*args)
        best = min(best, time.perf_counter() - t0)
    return best, out


def import_backends(names: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """Import each requested library lazily: ``(modules, {name: why skipped})``."""
    modules, skipped = {}, {}
    for name in names:
        try:
            modules[name] = importlib.import_module(name)
        except ImportError as exc:  # an optional backend: report, don't fail
            skipped[name] = f"{type(exc).__name__}: {exc}"
    return modules, skipped


def _version(name: str) -> str:
    """Installed distribution version of a backend (faiss ships as faiss-cpu)."""
    from importlib import metadata

    for dist in {"faiss": ("faiss-cpu", "faiss-gpu", "faiss")}.get(name, (name,)):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return "?"


class _WrappedIndex(NeighborIndex):
    """Shared post-processing of a foreign index: float64 distances, sorted rows.

    Subclasses implement ``_build(X32)`` and ``_search(Q32, k) -> indices``;
    ``param`` names the search attribute the benchmark sweeps.
    """

    param = ""

    def __init__(self, threads: int, seed: int):
        self.threads = threads
        self.seed = seed

    def fit(self, X: np.ndarray) -> "_WrappedIndex":
        self._X = np.asarray(X, dtype=np.float64)
        self._build(np.ascontiguousarray(X, dtype=np.float32))
        return self

    def kneighbors(self, X: np.ndarray, n_neighbors: int) -> tuple[np.ndarray, np.ndarray]:
        Xq = np.asarray(X, dtype=np.float64)
        idx = np.asarray(self._search(np.ascontiguousarray(Xq, dtype=np.float32), n_neighbors), dtype=np.intp)
        if idx.shape != (Xq.shape[0], n_neighbors) or (idx < 0).any():
            raise RuntimeError(
                f"{type(self).__name__} returned fewer than {n_neighbors} neighbours for some queries; "
                f"raise its search parameter {self.param!r}."
            )
        dist = np.empty(idx.shape, dtype=np.float64)
        for start in range(0, idx.shape[0], _DISTANCE_BLOCK):
            rows = slice(start, start + _DISTANCE_BLOCK)
            diff = self._X[idx[rows]] - Xq[rows, None, :]
            dist[rows] = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))
        order = np.argsort(dist, axis=1, kind="stable")
        return np.take_along_axis(dist, order, axis=1), np.take_along_axis(idx, order, axis=1)

    def _build(self, X32: np.ndarray) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _search(self, Q32: np.ndarray, k: int) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


class FaissHNSW(_WrappedIndex):
    """``faiss.IndexHNSWFlat`` (L2), searched with ``efSearch = max(ef, k)``."""

    param = "ef"

    def __init__(self, faiss: Any, M: int, ef_construction: int, ef: int, threads: int, seed: int):
        super().__init__(threads, seed)
        self.faiss, self.M, self.ef_construction, self.ef = faiss, M, ef_construction, ef

    def _build(self, X32: np.ndarray) -> None:
        self.faiss.omp_set_num_threads(self.threads)
        self.index_ = self.faiss.IndexHNSWFlat(X32.shape[1], self.M)
        self.index_.hnsw.efConstruction = self.ef_construction
        self.index_.add(X32)

    def _search(self, Q32: np.ndarray, k: int) -> np.ndarray:
        self.faiss.omp_set_num_threads(self.threads)
        self.index_.hnsw.efSearch = max(int(self.ef), k)
        return self.index_.search(Q32, k)[1]


class FaissIVF(_WrappedIndex):
    """``faiss.IndexIVFFlat`` on an exact L2 coarse quantizer, ``nprobe`` lists searched."""

    param = "nprobe"

    def __init__(self, faiss: Any, nlist: int, nprobe: int, threads: int, seed: int):
        super().__init__(threads, seed)
        self.faiss, self.nlist, self.nprobe = faiss, nlist, nprobe

    def _build(self, X32: np.ndarray) -> None:
        self.faiss.omp_set_num_threads(self.threads)
        self._quantizer = self.faiss.IndexFlatL2(X32.shape[1])  # kept alive: the IVF index borrows it
        self.index_ = self.faiss.IndexIVFFlat(self._quantizer, X32.shape[1], self.nlist)
        self.index_.cp.seed = self.seed
        self.index_.train(X32)
        self.index_.add(X32)

    def _search(self, Q32: np.ndarray, k: int) -> np.ndarray:
        self.faiss.omp_set_num_threads(self.threads)
        self.index_.nprobe = int(self.nprobe)
        return self.index_.search(Q32, k)[1]


class PyNNDescent(_WrappedIndex):
    """``pynndescent.NNDescent`` graph, ``prepare()``-d, searched with ``epsilon``."""

    param = "epsilon"

    def __init__(self, pynndescent: Any, n_neighbors: int, epsilon: float, threads: int, seed: int):
        super().__init__(threads, seed)
        self.pynndescent, self.n_neighbors, self.epsilon = pynndescent, n_neighbors, epsilon

    def _build(self, X32: np.ndarray) -> None:
        self.index_ = self.pynndescent.NNDescent(
            X32, n_neighbors=self.n_neighbors, random_state=self.seed, n_jobs=self.threads,
            parallel_batch_queries=self.threads > 1,
        )
        self.index_.prepare()

    def _search(self, Q32: np.ndarray, k: int) -> np.ndarray:
        import numba

        # NNDescent sets numba's threads only while building; queries use the global setting.
        saved = numba.get_num_threads()
        numba.set_num_threads(self.threads)
        try:
            return self.index_.query(Q32, k=k, epsilon=float(self.epsilon))[0]
        finally:
            numba.set_num_threads(saved)


def build_candidates(args: argparse.Namespace, modules: dict[str, Any], Xtr: np.ndarray) -> list[dict[str, Any]]:
    """Build every requested index once; each yields (index, swept attribute, values)."""
    out = []

    def add(backend: str, label: str, factory: Callable[[], NeighborIndex], param: str, values: list) -> None:
        t0 = time.perf_counter()
        index = factory().fit(Xtr)
        t_build = time.perf_counter() - t0
        print(f"built {label}: {t_build:.2f} s", flush=True)
        out.append(dict(backend=backend, label=label, index=index, param=param, values=values, build=t_build))

    if "hnswlib" in modules:
        seed = None if args.parallel_build else args.seed
        add("hnswlib", f"hnswlib M={args.M} efC={args.ef_construction}",
            lambda: HNSWIndex(M=args.M, ef_construction=args.ef_construction, random_state=seed,
                              n_jobs=args.threads, recall=args.recall, n_neighbors=args.k), "ef", [None, *args.ef])
        index = out[-1]["index"]
        print(f"  hnswlib ef chosen for recall {args.recall}: ef_={index.ef_} "
              f"(held-out recall@{args.k} {index.recall_:.4f})", flush=True)
    if "faiss" in modules:
        faiss = modules["faiss"]
        add("faiss", f"faiss HNSWFlat M={args.faiss_M} efC={args.faiss_ef_construction}",
            lambda: FaissHNSW(faiss, args.faiss_M, args.faiss_ef_construction, args.faiss_ef[0],
                              args.threads, args.seed), "ef", args.faiss_ef or args.ef)
        if args.ivf_nlist > 0:
            add("faiss", f"faiss IVFFlat nlist={args.ivf_nlist}",
                lambda: FaissIVF(faiss, args.ivf_nlist, args.ivf_nprobe[0], args.threads, args.seed),
                "nprobe", args.ivf_nprobe)
    if "pynndescent" in modules:
        pynnd = modules["pynndescent"]
        # Pay numba's compilation (build, prepare, query) on a small set first.
        t0 = time.perf_counter()
        warm = PyNNDescent(pynnd, args.pynnd_neighbors, 0.1, args.threads, args.seed).fit(Xtr[:3000])
        warm.kneighbors(Xtr[:100], args.k)
        print(f"pynndescent numba warm-up (not in build time): {time.perf_counter() - t0:.1f} s", flush=True)
        add("pynndescent", f"pynndescent n_neighbors={args.pynnd_neighbors}",
            lambda: PyNNDescent(pynnd, args.pynnd_neighbors, args.pynnd_epsilon[0], args.threads, args.seed),
            "epsilon", args.pynnd_epsilon)
    return out


def clocked(fn, *args):
    """``(wall s, CPU s of this process over all its threads, result)``.

    With one thread, CPU seconds are what the work costs whatever else the machine
    runs (on a shared machine wall time also counts other people's jobs).
    """
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn(*args)
    return time.perf_counter() - w0, time.process_time() - c0, out


def _crossover_n(points: list[tuple[int, float]]) -> str:
    """Smallest n where the HNSW/exact time ratio drops below 1 (log-log interpolation)."""
    where = next((i for i, (_, v) in enumerate(points) if v < 1.0), None)
    if where is None:
        return f"none up to n = {points[-1][0]} (HNSW/exact {points[-1][1]:.2f} there)"
    if where == 0:
        return f"below n = {points[0][0]} (HNSW/exact {points[0][1]:.2f} there)"
    (n0, v0), (n1, v1) = points[where - 1], points[where]
    t = np.log(v0) / (np.log(v0) - np.log(v1))
    return f"≈ {np.exp(np.log(n0) + t * (np.log(n1) - np.log(n0))):,.0f} (between {n0} and {n1})"


def crossover(args: argparse.Namespace) -> None:
    """Where HNSW (build and ef choice included) starts to beat exact search, for ``algorithm="auto"``.

    For each dimension in ``--dims`` and training size in ``--sizes``: the exact
    index ``algorithm="auto"`` falls back to (scikit-learn's "auto": trees in low
    dimension, brute force above 15 features), fitted and queried, against an
    :class:`HNSWIndex` (``--M``, ``--ef-construction``, ef chosen for ``--recall``),
    built and queried, for queries = n/4 and = n (``--query-ratios``). Prints wall
    and CPU seconds and, per dimension and query ratio, the smallest size where
    HNSW's total is lower. Run it with ``--threads 1`` on a shared machine: CPU
    seconds of one thread do not depend on other people's load.
    """
    from nwbound.neighbors import AUTO_HNSW_RULE, ExactIndex

    rows = []
    with threadpool_limits(limits=args.threads):
        for d in args.dims:
            for n in args.sizes:
                n_q = int(max(args.query_ratios) * n)
                X, _ = ecg_like(n + n_q, d, min(args.latent, d), args.seed, args.noise)
                X = X.astype(args.dtype)  # the dtype the estimator hands the index (its dtype parameter)
                Xtr, Xq = np.ascontiguousarray(X[:n]), np.ascontiguousarray(X[n:])
                ex_b = clocked(ExactIndex("auto", n_jobs=args.threads).fit, Xtr)
                seed = None if args.parallel_build else args.seed
                hn_b = clocked(HNSWIndex(M=args.M, ef_construction=args.ef_construction, recall=args.recall,
                                         n_neighbors=args.k, random_state=seed, n_jobs=args.threads).fit, Xtr)
                exact, hnsw = ex_b[2], hn_b[2]
                for ratio in args.query_ratios:
                    Q = Xq[: int(ratio * n)]
                    ex_q = clocked(exact.kneighbors, Q, args.k)
                    hn_q = clocked(hnsw.kneighbors, Q, args.k)
                    r = dict(d=d, n=n, q=Q.shape[0], exact=ex_b[0] + ex_q[0], exact_cpu=ex_b[1] + ex_q[1],
                             build=hn_b[0], query=hn_q[0], hnsw_cpu=hn_b[1] + hn_q[1],
                             recall=recall_at_k(hn_q[2][1], ex_q[2][1]), ef=hnsw.ef_)
                    rows.append(r)
                    print(f"d={d:<4} n={n:<8} q={r['q']:<8} exact {r['exact']:8.2f} s (CPU {r['exact_cpu']:8.2f}) | "
                          f"hnsw build {r['build']:7.2f} + query {r['query']:6.2f} s (CPU {r['hnsw_cpu']:8.2f}) | "
                          f"ef_={hnsw.ef_}, held-out recall {hnsw.recall_:.4f}, recall@{args.k} {r['recall']:.4f}, "
                          f"load {os.getloadavg()[0]:.1f}", flush=True)

    print(f"\n{'d':>4}{'n_train':>9}{'queries':>9}{'exact s':>9}{'build s':>9}{'query s':>9}{'ratio':>7}"
          f"{'exact CPU':>11}{'HNSW CPU':>10}{'ratio':>7}{'ef_':>5}{'recall':>8}")
    for r in rows:
        total = r["build"] + r["query"]
        print(f"{r['d']:>4}{r['n']:>9}{r['q']:>9}{r['exact']:>9.2f}{r['build']:>9.2f}{r['query']:>9.2f}"
              f"{total / r['exact']:>7.2f}{r['exact_cpu']:>11.2f}{r['hnsw_cpu']:>10.2f}"
              f"{r['hnsw_cpu'] / r['exact_cpu']:>7.2f}{r['ef']:>5}{r['recall']:>8.4f}")
    print("\ncrossover: smallest n_train where HNSW's build + queries beat exact search")
    for d in args.dims:
        for ratio in args.query_ratios:
            sub = [r for r in rows if r["d"] == d and r["q"] == int(ratio * r["n"])]
            wall = _crossover_n([(r["n"], (r["build"] + r["query"]) / r["exact"]) for r in sub])
            cpu = _crossover_n([(r["n"], r["hnsw_cpu"] / r["exact_cpu"]) for r in sub])
            print(f"  d = {d}, queries = {ratio:g} · n: wall {wall}; CPU {cpu}")
    print(f"current rule: {AUTO_HNSW_RULE}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=87_554, help="training rows")
    parser.add_argument("--queries", type=int, default=21_892)
    parser.add_argument("--d", type=int, default=100, help="features")
    parser.add_argument("--latent", type=int, default=6, help="intrinsic dimension")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--M", type=int, default=16)
    parser.add_argument("--ef-construction", type=int, default=100)
    parser.add_argument("--ef", type=int, nargs="+", default=[32, 64, 128, 256])
    parser.add_argument("--threads", type=int, default=1, help="search threads (and BLAS threads)")
    parser.add_argument("--bandwidth", type=float, default=0.75)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--noise", type=float, default=0.01, help="feature noise of the synthetic stand-in")
    parser.add_argument("--ecg", metavar="MITDB_DIR", default=None,
                        help="use real MIT-BIH beats (paper features, intra-patient 80/20 split) instead")
    parser.add_argument("--parallel-build", action="store_true",
                        help="build the graph with --threads threads (not reproducible; default: seeded, 1 thread)")
    parser.add_argument("--knn-algorithm", default="auto", help="algorithm of the KNeighborsClassifier baseline")
    parser.add_argument("--skip-exact-trees", action="store_true", help="time only brute force as the exact index")
    parser.add_argument("--backends", default="hnswlib",
                        help=f"comma-separated approximate backends out of {', '.join(BACKENDS)} (default: hnswlib)")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved timing rounds per search setting")
    parser.add_argument("--target-recall", type=float, default=0.999,
                        help="report each backend's fastest setting with at least this recall@k")
    parser.add_argument("--faiss-M", type=int, default=32)
    parser.add_argument("--faiss-ef-construction", type=int, default=200)
    parser.add_argument("--faiss-ef", type=int, nargs="+", default=None, help="efSearch values (default: --ef)")
    parser.add_argument("--ivf-nlist", type=int, default=1024, help="faiss IVFFlat lists (0: skip IVF)")
    parser.add_argument("--ivf-nprobe", type=int, nargs="+", default=[16, 32, 64, 128])
    parser.add_argument("--pynnd-neighbors", type=int, default=30, help="pynndescent graph degree")
    parser.add_argument("--pynnd-epsilon", type=float, nargs="+", default=[0.0, 0.1, 0.2, 0.3])
    parser.add_argument("--crossover", action="store_true",
                        help="only measure where HNSW (build included) beats exact search, over --sizes and --dims")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 20_000, 40_000, 80_000])
    parser.add_argument("--dims", type=int, nargs="+", default=[100, 4])
    parser.add_argument("--query-ratios", type=float, nargs="+", default=[0.25, 1.0])
    parser.add_argument("--recall", type=float, default=0.99, help="HNSWIndex recall target (ef chosen for it)")
    parser.add_argument("--dtype", default="float64", choices=["float64", "float32"],
                        help="--crossover: dtype of the data (exact search in float32 is about twice as fast)")
    args = parser.parse_args()
    if args.crossover:
        print(f"cpus={os.cpu_count()}, threads={args.threads}, load average {os.getloadavg()[0]:.2f}, "
              f"parallel build={args.parallel_build}, dtype={args.dtype}", flush=True)
        crossover(args)
        return

    requested = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = sorted(set(requested) - set(BACKENDS))
    if unknown or not requested:
        parser.error(f"--backends: unknown {', '.join(unknown) or '(empty)'}; choose from {', '.join(BACKENDS)}.")
    if args.repeats < 1:
        parser.error("--repeats must be >= 1.")
    args.faiss_ef = args.faiss_ef or args.ef
    modules, skipped = import_backends(requested)

    if args.ecg:
        from nwbound.datasets import load_mitbih_beats, paper_features, split_beats

        train, test = split_beats(load_mitbih_beats(args.ecg, progress=False), split="intra")
        Xtr, Xq, _ = paper_features(train, test, n_features=args.d)
        ytr = train.y
        source = f"MIT-BIH beats from {args.ecg}"
    else:
        X, y = ecg_like(args.n + args.queries, args.d, args.latent, args.seed, args.noise)
        Xtr, ytr, Xq = X[: args.n], y[: args.n], X[args.n :]
        source = f"synthetic, latent dim {args.latent}, noise {args.noise}"
    Xtr, Xq = np.ascontiguousarray(Xtr, dtype=np.float64), np.ascontiguousarray(Xq, dtype=np.float64)
    print(f"data: {Xtr.shape[0]} x {Xtr.shape[1]} train, {Xq.shape[0]} queries, k={args.k}, {source}, "
          f"threads={args.threads}, cpus={os.cpu_count()}, load average {os.getloadavg()[0]:.2f}")
    versions = ", ".join(f"{name} {_version(name)}" for name in modules)
    print(f"backends: {versions}" + "".join(f"; skipped {name} ({why})" for name, why in skipped.items()))
    print(f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE')}", flush=True)

    def nwc(algorithm, **kw):
        return NadarayaWatsonClassifier(metric=None, 
            n_neighbors=args.k, algorithm=algorithm, bandwidth=args.bandwidth, lipschitz=0.05,
            n_jobs=args.threads, **kw,
        )

    rows = []
    with threadpool_limits(limits=args.threads):
        exact_algos = ["brute"] if args.skip_exact_trees else ["brute", "kd_tree", "ball_tree"]
        exact_idx = None
        for algo in exact_algos:
            nn = NearestNeighbors(algorithm=algo, n_jobs=args.threads)
            t_build, _ = timed(nn.fit, Xtr)
            t_query, (_, idx) = timed(nn.kneighbors, Xq, args.k)
            if exact_idx is None:
                exact_idx = idx
            rows.append((f"exact {algo}", t_build, t_query, recall_at_k(idx, exact_idx), None))

        exact_model = nwc("brute").fit(Xtr, ytr)
        t_nwc_exact, exact_pred = timed(exact_model.predict, Xq)
        knn = KNeighborsClassifier(n_neighbors=args.k, algorithm=args.knn_algorithm, n_jobs=args.threads).fit(Xtr, ytr)
        t_knn, _ = timed(knn.predict, Xq)

        # The estimator searches in coordinates divided by a power of two (exact): build the
        # candidates there too, so that they can stand in for its index.
        scale = getattr(exact_model, "_index_scale", 1.0)
        Xtr_s, Xq_s = Xtr / scale, Xq / scale
        candidates = build_candidates(args, modules, Xtr_s)
        settings = [(c, v) for c in candidates for v in c["values"]]
        # Untimed first pass per setting (also the warm-up): recall and the
        # localized NWC through the estimator's own sums, with the index swapped in.
        quality = []
        for cand, value in settings:
            index = cand["index"]
            setattr(index, cand["param"], value)
            _, idx = index.kneighbors(Xq_s, args.k)
            exact_model.index_, saved = index, exact_model.index_
            pred = exact_model.predict(Xq)
            exact_model.index_ = saved
            quality.append((recall_at_k(idx, exact_idx), float(np.mean(pred == exact_pred))))
        # Interleaved timing rounds; the start rotates so no setting always runs first.
        times = [[] for _ in settings]
        for r in range(args.repeats):
            for j in np.roll(np.arange(len(settings)), -r):
                cand, value = settings[j]
                setattr(cand["index"], cand["param"], value)
                t0 = time.perf_counter()
                cand["index"].kneighbors(Xq_s, args.k)
                times[j].append(time.perf_counter() - t0)

    approx = []
    for (cand, value), (rec, agree), ts in zip(settings, quality, times):
        shown = f"tuned {cand['index'].ef_}" if value is None else value  # None: ef_ chosen for --recall
        name = f"{cand['label']} {cand['param']}={shown}"
        approx.append(dict(name=name, backend=cand["backend"], build=cand["build"], query=float(np.median(ts)),
                           spread=(min(ts), max(ts)), recall=rec, agree=agree))
        rows.append((name, cand["build"], float(np.median(ts)), rec, agree))

    width = max(18, max(len(r[0]) for r in rows) + 2)
    print(f"\n{'index':<{width}}{'build s':>10}{'query s':>10}{'recall@k':>11}{'agree %':>10}")
    for name, tb, tq, rec, agree in rows:
        agree_s = "" if agree is None else f"{100 * agree:.3f}"
        print(f"{name:<{width}}{tb:>10.3f}{tq:>10.3f}{rec:>11.5f}{agree_s:>10}")
    print(f"(approximate query times: median of {args.repeats} interleaved rounds)")
    print(f"\nlocalized NWC predict, exact brute index: {t_nwc_exact:.3f} s; "
          f"sklearn KNeighborsClassifier({args.knn_algorithm}).predict: {t_knn:.3f} s")
    for a in approx:
        print(f"{a['name']}: predicted class identical to the exact index on {100 * a['agree']:.3f} % of queries "
              f"(query s min/max {a['spread'][0]:.3f}/{a['spread'][1]:.3f})")

    print(f"\nfastest setting per backend with recall@{args.k} >= {args.target_recall}:")
    for backend in [b for b in requested if b in modules]:
        ok = [a for a in approx if a["backend"] == backend and a["recall"] >= args.target_recall]
        if ok:
            best = min(ok, key=lambda a: a["query"])
            print(f"  {backend}: {best['name']} — build {best['build']:.2f} s, query {best['query']:.3f} s, "
                  f"recall {best['recall']:.5f}, agreement {100 * best['agree']:.3f} %")
        else:
            top = max((a for a in approx if a["backend"] == backend), key=lambda a: a["recall"])
            print(f"  {backend}: none reached it (best recall {top['recall']:.5f} at {top['name']})")
    for name, why in skipped.items():
        print(f"  {name}: skipped ({why})")


if __name__ == "__main__":
    main()
