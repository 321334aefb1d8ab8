"""Kernels against the paper's table (appendix F), rescaled so that sup K = 1."""

import math

import numpy as np
import pytest

from nwbound.kernels import KERNEL_NAMES, Kernel, gaussian_kernel, get_kernel

U = np.linspace(0.0, 4.0, 4001)

# The paper's definitions, written out independently (cosine rescaled by 4/π).
REFERENCE = {
    "boxcar": lambda u: 1.0 if u <= 1 else 0.0,
    "epanechnikov": lambda u: 1 - u**2 if u <= 1 else 0.0,
    "quartic": lambda u: (1 - u**2) ** 2 if u <= 1 else 0.0,
    "triweight": lambda u: (1 - u**2) ** 3 if u <= 1 else 0.0,
    "tricube": lambda u: (1 - u**3) ** 3 if u < 1 else 0.0,
    "cosine": lambda u: math.cos(math.pi * u / 2) if u <= 1 else 0.0,
    "gaussian": lambda u: math.exp(-(u**2) / 2) if u <= 3 else 0.0,
    "gaussian_untruncated": lambda u: math.exp(-(u**2) / 2),
}


@pytest.mark.parametrize("name", KERNEL_NAMES)
def test_kernel_matches_reference_definition(name):
    kernel = get_kernel(name)
    expected = np.array([REFERENCE[name](u) for u in U])
    np.testing.assert_allclose(kernel(U), expected, atol=1e-12)
    np.testing.assert_allclose(kernel.from_squared(U**2), expected, atol=1e-12)
    assert kernel(np.array([0.0]))[0] == pytest.approx(1.0)
    assert kernel.sup == 1.0


@pytest.mark.parametrize("name", [n for n in KERNEL_NAMES if n != "gaussian_untruncated"])
def test_compact_kernels_are_exactly_zero_outside_support(name):
    kernel = get_kernel(name)
    beyond = np.linspace(kernel.radius + 1e-9, kernel.radius + 5, 500)
    assert np.all(kernel(beyond) == 0.0)
    assert kernel.compact


def test_float32_input_keeps_float32():
    kernel = get_kernel("epanechnikov")
    assert kernel.from_squared(np.array([0.25], dtype=np.float32)).dtype == np.float32


def test_aliases_and_truncation():
    assert get_kernel("biweight").name == "quartic"
    assert get_kernel("Epanechnikov").name == "epanechnikov"
    assert gaussian_kernel(2.0).radius == 2.0
    assert not get_kernel("gaussian_untruncated").compact


def test_unknown_kernel_name_lists_choices():
    with pytest.raises(ValueError, match="Unknown kernel 'gauss'.*epanechnikov"):
        get_kernel("gauss")


def test_callable_kernel_is_checked_and_support_inferred():
    k = get_kernel(lambda u: np.clip(1 - u, 0, None))
    assert isinstance(k, Kernel) and k.radius == 1.0 and k.sup == pytest.approx(1.0)
    k_inf = get_kernel(lambda u: 1.0 / (1.0 + u**2))
    assert k_inf.radius == math.inf


@pytest.mark.parametrize(
    "func, exc, match",
    [
        (lambda u: u - 0.5, ValueError, "non-negative"),
        (lambda u: 1.0 / u, ValueError, "bounded"),
        (lambda u: np.ones(3), TypeError, "same shape"),
        (lambda u: np.zeros_like(u), ValueError, "zero everywhere"),
    ],
)
def test_bad_callable_kernels(func, exc, match):
    with pytest.raises(exc, match=match):
        get_kernel(func)


def test_kernel_of_wrong_type():
    with pytest.raises(TypeError, match="kernel must be"):
        get_kernel(3)
