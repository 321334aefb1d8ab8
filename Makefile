# Two entry points that bootstrap a local virtual environment from this
# project's own files: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEMO_STAMP := $(VENV)/.demo-stamp
PYTEST_ARGS ?=
# pytest-xdist: one worker per core of a 2-core machine; a file stays on one worker, so its
# module-scoped fixtures (quick experiment runs, fitted models) are built once.
PYTEST_WORKERS ?= 2
PYTEST_XDIST := -n $(PYTEST_WORKERS) --dist loadfile
# One BLAS/OpenMP thread per worker (scikit-learn's score models): two workers with two pools
# each would oversubscribe two cores. nwbound's own threads (numba, n_jobs) are left as they are.
PYTEST_ENV := OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} OPENBLAS_NUM_THREADS=$${OPENBLAS_NUM_THREADS:-1} MKL_NUM_THREADS=$${MKL_NUM_THREADS:-1}

.PHONY: demo test docs test-all bench install clean-venv

# The virtual environment itself (pip upgraded once); the stamps below install into it.
$(BIN)/python:
	@echo "nwbound: first run - building a local virtual environment in $(VENV)/."
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# What `make test` and `make docs` need: nwbound with its test extras (every optional
# dependency, sphinx, pytest, hypothesis).
$(STAMP): pyproject.toml | $(BIN)/python
	@echo "nwbound: installing nwbound and its test extras (pip install -e '.[test]', a few minutes, once); pip reports each package"
	$(BIN)/python -m pip install --disable-pip-version-check -e ".[test]"
	touch $(STAMP)
	@echo "nwbound: environment ready ($(VENV)/)."

install: $(STAMP)

# What `make demo` needs and nothing more: nwbound (numpy, scipy, scikit-learn) and matplotlib
# for its figure.
$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	@echo "nwbound: installing what the demo needs (pip install -e '.[plots]': numpy, scipy, scikit-learn, matplotlib)"
	$(BIN)/python -m pip install --disable-pip-version-check -e ".[plots]"
	touch $(DEMO_STAMP)

## The main job on embedded synthetic data (no download): table, coverage, figure.
demo: $(DEMO_STAMP)
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
