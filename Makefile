# Two entry points that bootstrap a local virtual environment from this
# project's own files: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTEST_ARGS ?=
# pytest-xdist: one worker per core of a 2-core machine; a file stays on one worker, so its
# module-scoped fixtures (quick experiment runs, fitted models) are built once.
PYTEST_WORKERS ?= 2
PYTEST_XDIST := -n $(PYTEST_WORKERS) --dist loadfile
# One BLAS/OpenMP thread per worker (scikit-learn's score models): two workers with two pools
# each would oversubscribe two cores. nwbound's own threads (numba, n_jobs) are left as they are.
PYTEST_ENV := OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} OPENBLAS_NUM_THREADS=$${OPENBLAS_NUM_THREADS:-1} MKL_NUM_THREADS=$${MKL_NUM_THREADS:-1}

.PHONY: demo test docs test-all bench install clean-venv

$(STAMP): pyproject.toml
	@echo "nwbound: first run - building a local virtual environment in $(VENV)/ from pyproject.toml."
	@echo "nwbound: this installs numpy, scipy, scikit-learn, pandas, matplotlib, ... (a few minutes, once)."
	$(PYTHON) -m venv $(VENV)
	@echo "nwbound: [1/2] upgrading pip in $(VENV)/"
	$(BIN)/python -m pip install --quiet --upgrade pip
	@echo "nwbound: [2/2] installing nwbound and its test extras (pip install -e '.[test]'); pip reports each package"
	$(BIN)/python -m pip install --disable-pip-version-check -e ".[test]"
	touch $(STAMP)
	@echo "nwbound: environment ready ($(VENV)/)."

install: $(STAMP)

## The main job on embedded synthetic data (no download): table, coverage, figure.
demo: $(STAMP)
	@echo "nwbound: running the demo (fit on synthetic data with known probabilities; writes results/demo/)"
	$(BIN)/nwbound demo --output results/demo --overwrite

## The everyday run: every test not marked slow and every doctest, on two workers, then the docs.
test: $(STAMP)
	$(PYTEST_ENV) $(BIN)/python -m pytest -q -m "not slow" $(PYTEST_XDIST) $(PYTEST_ARGS)
	$(MAKE) --no-print-directory docs

## Everything, the slow tests (statistical tests at large n, full-data runs) included, then the docs: what CI runs.
test-all: $(STAMP)
	$(PYTEST_ENV) $(BIN)/python -m pytest -q $(PYTEST_XDIST) $(PYTEST_ARGS)
	$(MAKE) --no-print-directory docs

## The documentation site (API reference, user guide, executed gallery); warnings are errors.
docs: $(STAMP)
	$(BIN)/python -m sphinx -W --keep-going -q -b html docs/source docs/_build/html
	@echo "nwbound: documentation in docs/_build/html/index.html"

## Benchmarks: print figures and ratios (never part of the tests).
bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

clean-venv:
	rm -rf $(VENV)
