# Two entry points that bootstrap a local virtual environment from this
# project's own files: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTEST_ARGS ?=

.PHONY: demo test test-all bench install clean-venv

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

## The main job on embedded synthetic data (no download): table, coverage, figure.
demo: $(STAMP)
	$(BIN)/nwbound demo --output results/demo --overwrite

## The default test run (statistical / full-data tests marked slow are included
## only where they fit; see .ci/run).
test: $(STAMP)
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

## Benchmarks: print figures and ratios (never part of the tests).
bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

clean-venv:
	rm -rf $(VENV)
