"""Shared pytest hooks: docstring examples that need PyTorch skip where it is not installed (CI)."""

from __future__ import annotations

import importlib.util

import pytest

HAS_TORCH = importlib.util.find_spec("torch") is not None


def pytest_collection_modifyitems(config, items):
    if HAS_TORCH:
        return
    skip = pytest.mark.skip(reason="the example needs PyTorch (pip install torch)")
    for item in items:
        test = getattr(item, "dtest", None)  # a doctest item
        if test is not None and any("import torch" in ex.source for ex in test.examples):
            item.add_marker(skip)
