"""Startup of the command line (issue 32): numba's on-disk cache and lazy imports.

Every CLI call used to pay about 5 s compiling the split-Chernoff loop (no
``cache=True``), and a read-only install with no writable cache folder could
not import the compiled modules at all. ``--help``, argument errors and
``predict`` must not import what they do not use. No timing is asserted here:
what is checked is what makes the time (a cache hit, the modules imported).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

numba = pytest.importorskip("numba")

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _run(code: str, env: dict[str, str] | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    full.update(PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""), **(env or {}))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=full, timeout=timeout)


# A small chernoff-bound prediction: it runs the split-Chernoff loop and the fused tile sums.
_PREDICT = """
    import numpy as np
    from nwbound import NadarayaWatsonClassifier
    from nwbound.bounds import _chernoff_binned
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 2)); y = (X[:, 0] > 0).astype(int)
    clf = NadarayaWatsonClassifier(metric=None, lipschitz=1.0, bandwidth=0.8, bound="chernoff").fit(X, y)
    clf.predict_interval(X[:5])
    loop = _chernoff_binned._NUMBA_ROUTE
"""


def test_split_chernoff_loop_is_loaded_from_the_disk_cache():
    """The second process loads the compiled split loop instead of compiling it again."""
    code = _PREDICT + """
    import json
    print(json.dumps([sum(loop.stats.cache_hits.values()), sum(loop.stats.cache_misses.values())]))
    """
    first = _run(code)  # compiles when the cache is cold (numba's default folder)
    assert first.returncode == 0, first.stderr
    second = _run(code)
    assert second.returncode == 0, second.stderr
    hits, misses = json.loads(second.stdout.strip().splitlines()[-1])
    assert (hits, misses) == (1, 0)


def test_split_loop_cache_key_covers_every_source_file(tmp_path):
    """Editing a file the loop is copied from (not its own) must not load the old machine code."""
    from numba.core.registry import cpu_target

    from nwbound._numba_cache import njit_cached

    own, other = tmp_path / "own.py", tmp_path / "other.py"
    own.write_text("x = 1\n")
    other.write_text("y = 2\n")

    def add(a, b):
        return a + b

    def key() -> tuple:
        dispatcher = njit_cached(add, sources=(own, other))
        return dispatcher._cache._index_key((numba.int64, numba.int64), cpu_target.target_context.codegen())

    before = key()
    assert key() == before  # same files: the cached code is reused
    other.write_text("y = 3\n")
    assert key() != before


_READ_ONLY = """
    # Simulate a read-only install and home folder: every cache folder but the temporary one fails.
    import os, tempfile
    from numba.core import caching
    allowed = os.environ["ALLOWED"]
    real = caching._CacheLocator.ensure_cache_path
    def ensure(self):
        if not (allowed and self.get_cache_path().startswith(allowed)):
            raise OSError(30, "Read-only file system")
        return real(self)
    caching._CacheLocator.ensure_cache_path = ensure
"""


@pytest.mark.parametrize("writable_tmp", [True, False])
def test_read_only_install_does_not_crash(tmp_path, writable_tmp):
    """No writable cache folder: numba's cache=True raised at import; now a temporary folder, or no cache."""
    env = {"ALLOWED": str(tmp_path) if writable_tmp else "", "TMPDIR": str(tmp_path)}
    code = _READ_ONLY + """
    from nwbound.bounds import _chernoff, _chernoff_binned
    from nwbound.engine.host import _fused
    caches = [_chernoff_binned._numba_loop()._cache, _chernoff._numba_route()._loop._cache, _fused.tile_sums._cache]
    print(" ".join(getattr(c, "_cache_path", "-") for c in caches))
    """
    proc = _run(code, env)
    assert proc.returncode == 0, proc.stderr
    paths = proc.stdout.split()
    assert len(paths) == 3
    if writable_tmp:  # cached in the fallback folder under the temporary directory
        assert all(p.startswith(str(tmp_path / "nwbound-numba")) for p in paths)
    else:  # compiled once per process, as without a cache
        assert paths == ["-"] * 3


# ----------------------------------------------------------------------------------------------
# Lazy imports: what a command imports is what it uses
# ----------------------------------------------------------------------------------------------
HEAVY = ("sklearn", "numba", "matplotlib", "dask", "torch", "nwbound.experiments.tabular", "nwbound.plots")


def _cli_modules(argv: list[str], cwd: Path, block: tuple[str, ...] = ()) -> tuple[int, list[str], str]:
    """Run ``nwbound argv`` in a fresh interpreter: exit code, heavy modules imported, stderr."""
    code = f"""
    import contextlib, io, json, sys
    for name in {list(block)!r}:
        sys.modules[name] = None  # not installed
    from nwbound.cli.main import main
    err = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            rc = main({argv!r})
    except SystemExit as exc:
        rc = exc.code
    heavy = sorted(m for m in {list(HEAVY)!r} if sys.modules.get(m) is not None)
    print(json.dumps([rc, heavy, err.getvalue()]))
    """
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=cwd,
                          env=dict(os.environ, PYTHONPATH=SRC), timeout=600)
    assert proc.returncode == 0, proc.stderr
    rc, heavy, err = json.loads(proc.stdout.strip().splitlines()[-1])
    return rc, heavy, err


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory):
    """A small model file and tables: ``train.csv``, ``test.csv``, ``typo.csv`` (a misspelled feature)."""
    pd = pytest.importorskip("pandas")
    import numpy as np

    from nwbound import NadarayaWatsonClassifier
    from nwbound.io import save_model

    folder = tmp_path_factory.mktemp("startup")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(200, 2)), columns=["width", "height"])
    frame["label"] = np.where(frame["width"] > 0, "a", "b")
    frame.to_csv(folder / "train.csv", index=False)
    frame.iloc[:100].to_csv(folder / "test.csv", index=False)
    frame.iloc[:100].rename(columns={"width": "widht"}).to_csv(folder / "typo.csv", index=False)
    clf = NadarayaWatsonClassifier(metric=None, lipschitz=1.0).fit(frame[["width", "height"]], frame["label"])
    save_model(clf, folder / "model.npz")
    return folder


@pytest.mark.parametrize("argv", [["--help"], ["predict", "--help"], ["experiment", "--help"]])
def test_help_imports_nothing_heavy(saved_model, argv):
    rc, heavy, _ = _cli_modules(argv, saved_model)
    assert rc == 0 and heavy == []


@pytest.mark.parametrize("argv, wrong", [
    (["predict", "model.npz", "typo.csv", "-o", "out.csv"], "'width'"),
    (["evaluate", "model.npz", "typo.csv", "--target", "label"], "'width'"),
    (["evaluate", "model.npz", "test.csv", "--target", "lable"], "'lable'"),
    (["fit", "train.csv", "--target", "lable", "-o", "new.npz"], "'lable'"),
    (["fit", "train.csv", "--target", "label", "--features", "widht", "-o", "new.npz"], "'widht'"),
    (["predict", "model.npz", "test.csv", "-o", "out.csv", "--id-columns", "nope"], "'nope'"),
])
def test_misspelled_column_is_reported_before_the_estimators_are_imported(saved_model, argv, wrong):
    """The column check reads the table's header and the model file's stored names only."""
    rc, heavy, err = _cli_modules(argv, saved_model)
    assert rc == 2 and wrong in err
    assert heavy == []
    assert not (saved_model / "out.csv").exists() and not (saved_model / "new.npz").exists()


def test_predict_imports_no_plotting_experiments_or_accelerators(saved_model):
    rc, heavy, err = _cli_modules(["predict", "model.npz", "test.csv", "-o", "pred.csv", "--quiet"], saved_model)
    assert rc == 0, err
    assert (saved_model / "pred.csv").is_file()
    assert not {"matplotlib", "dask", "torch", "nwbound.experiments.tabular", "nwbound.plots"} & set(heavy)


def test_predict_with_a_default_model_file_does_not_import_skops(saved_model):
    """skops' import lists every scikit-learn estimator (about a second); reading a model file needs none of it,
    nor scikit-learn (the learned space's frozen arrays, format 4)."""
    import warnings

    import pandas as pd

    from nwbound.cli.main import main

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["fit", str(saved_model / "train.csv"), "--target", "label", "-o",
                     str(saved_model / "default.npz"), "--overwrite", "--quiet"]) == 0
    code = """
    import contextlib, io, sys
    from nwbound.cli.main import main
    with contextlib.redirect_stderr(io.StringIO()):
        rc = main(["predict", "default.npz", "test.csv", "-o", "default.csv", "--quiet", "--overwrite"])
    print(rc, sorted({m.split(".")[0] for m in sys.modules if m.startswith(("skops", "sklearn.ensemble"))}))
    """
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          cwd=saved_model, env=dict(os.environ, PYTHONPATH=SRC), timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[0] == "0" and "skops" not in proc.stdout
    assert "sklearn" not in proc.stdout  # the map's frozen arrays: no scikit-learn either
    assert len(pd.read_csv(saved_model / "default.csv")) == 100


def test_experiment_named_imports_only_that_experiment(saved_model):
    """``nwbound experiment tabular --help`` builds that experiment's options, and no other experiment's."""
    code = """
    import contextlib, io, sys
    from nwbound.cli.main import main
    with contextlib.redirect_stdout(io.StringIO()) as out:
        try:
            main(["experiment", "tabular", "--help"])
        except SystemExit:
            pass
    print("--datasets" in out.getvalue(), sorted(m for m in sys.modules if m.startswith("nwbound.experiments.")))
    """
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr
    shown, modules = proc.stdout.split(" ", 1)
    assert shown == "True"
    assert "nwbound.experiments.tabular" in modules and "nwbound.experiments.mnist" not in modules


def test_experiment_help_lists_every_description():
    from nwbound.cli.experiment import description
    from nwbound.experiments import EXPERIMENTS

    for name in EXPERIMENTS:
        module = __import__(f"nwbound.experiments.{name}", fromlist=["DESCRIPTION"])
        assert description(name) == module.DESCRIPTION
