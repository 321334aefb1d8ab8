r"""Checking an assumed Lipschitz constant on held-out rows.

The bounds hold under an assumption — ``p_c`` is ``L``-Lipschitz in the metric
the classifier computes distances in — that no finite sample can certify.
What held-out data *can* do is reject an ``L`` that is too small: under the
assumption the intervals limit how often certified predictions err and how
often each class occurs, and too many errors (or too many or too few labels of
a class) are evidence against it. :func:`check_lipschitz` is that test;
:func:`select_lipschitz` runs it on a grid and keeps the smallest ``L`` that
the data do not reject.

**The test.** Let ``N`` be the rows in the model's kernel sums and ``H`` the
``n`` held-out rows (their labels did *not* enter the sums). Fix ``L`` and
compute on ``H`` the intervals at a small level ``δ_t`` (simultaneous over the
classes). Let ``F`` be the set of rows of ``H`` whose interval misses ``p`` for
some class.

1. *Markov allowance.* Given the inputs, each row is in ``F`` with probability
   ``≤ δ_t``, so ``E|F| ≤ n·δ_t``. The rows share ``N``'s labels, so they can
   fail together; Markov's inequality is what holds regardless:
   ``P(|F| > m) ≤ n·δ_t/(m + 1)``. With ``m = ⌊r·n⌋`` (``r`` =
   ``free_share``) and ``δ_t = β·(m + 1)/n`` this is ``≤ β``.
2. *Poisson-binomial tail.* Conditional on ``N`` the labels of ``H`` are
   independent. Consider a count ``S = Σ_{j∈R} Z_j`` of events over rows
   ``R``, with a ceiling ``c_j`` that bounds ``P(Z_j = 1)`` on every row not in
   ``F``. A row in ``F`` can contribute 1 at most, so on ``{|F| ≤ m}``

   .. math:: S \preceq m' + \mathrm{PB}\big(c_j : j \in R \setminus R_{m'}\big),
             \qquad m' = \min(m, |R|),

   where ``R_{m'}`` holds the ``m'`` rows of *smallest* ceiling and ``⪯`` is
   stochastic order. (Replacing ``Bernoulli(c_j)`` by 1 gains most where
   ``c_j`` is smallest; any other set of ``≤ m`` failed rows gives a
   stochastically smaller sum, by pairing the sorted ceilings. This is the
   exact worst case, so no valid threshold built from the ceilings and ``m``
   alone is smaller.) Reject when ``P(m' + PB ≥ S_obs) ≤ α_i``.
3. *The counts tested.* Errors among the rows certified at the model's own
   ``δ`` (or at ``δ_t``: ``certified_at="test"``), with ceiling ``1 − lower``
   of the predicted class. With ``per_class=True`` also, for each class
   ``c``, the rows labelled ``c`` (ceiling ``upper_c``) and the rows not
   labelled ``c`` (ceiling ``1 − lower_c``), separately among the rows
   predicted ``c`` and among the others — which gives power when few rows are
   certified. (The usual bias pulls ``p̂`` toward a local mean, with opposite
   signs on the two sides of a decision boundary; a count over all rows would
   let them cancel. The groups depend on the inputs and ``N`` only, never on
   ``H``'s labels.) Before use, each class's interval is intersected with what
   the others imply (``Σ_c p_c = 1``); for two classes the two classes' tests
   coincide and are run once.
4. *Contrasts* (``contrast=True``). The counts compare labels with intervals
   at ``δ_t``, which are wide: an ``L`` whose intervals at the model's ``δ``
   miss ``p`` on a few per cent of queries by a little gives intervals at
   ``δ_t`` that hardly miss at all. The contrasts test the Lipschitz condition
   itself. For a class ``c`` and a share ``q`` (``CONTRAST_FRACTIONS``) let
   ``A`` be the ``k`` rows of highest ``p̂_c`` and ``B`` the ``k`` of lowest,
   matched one to one (``π``) at least total distance, in the space the model
   computes distances in. ``S = Σ_A 1[y = c] + Σ_B 1[y ≠ c]`` is, given ``N``
   and the inputs, a sum of ``2k`` independent Bernoulli variables with mean

   .. math:: k + \sum_{j \in A} \big(p_c(x_j) - p_c(x_{\pi(j)})\big)
             \le k + \sum_{j \in A} \min\big(1, L\,d(x_j, x_{\pi(j)})\big) = \mu_0

   under the assumption, so Chernoff's bound
   ``P(S ≥ s) ≤ exp(−2k·kl(s/2k ‖ μ₀/2k))`` (``s > μ₀``) is a valid p-value. It
   needs no interval and no allowance. ``A``, ``B`` and ``π`` come from ``p̂``
   and the inputs, never from ``H``'s labels.
5. *Level.* The ``T`` tests (counts and contrasts) share ``α − β``
   (Bonferroni, ``α_i = (α − β)/T``); the counts rest on ``{|F| ≤ m}``, the
   contrasts on nothing, so

   .. math:: P(\text{reject a true } L) \le \beta + (\alpha - \beta) = \alpha.

   A test that could not reject even if every one of its rows counted
   (``P(m′ + PB ≥ |R|) > α_i``) is dropped before the split, repeatedly; the
   choice uses the ceilings only, never ``H``'s labels, so the split stays valid.

Why the test's intervals use ``δ_t`` and not the model's ``δ``: Markov needs
``δ/β`` small, and at ``δ = 0.05`` with ``β ≤ 0.05`` the allowance would be every
row. A smaller ``δ_t`` only widens the sampling part of the interval (by a
factor ≈ ``√(log(2/δ_t)/log(2/δ))``), not the ``L``-dependent bias the test is
about. Intervals at any level are consequences of the assumption, so testing
them tests it.

**What it is not.** Not rejecting ``L`` means the held-out data are consistent
with it: ``L`` is an *assumption consistent with held-out data, not a
certified fact*, and a small held-out set has little power to reject.

At a fixed bandwidth all intervals are nested in ``L``, so choosing ``L`` this
way costs the bound nothing when the chosen value is at least the true constant
``L*``: ``P(p ∉ I(L̂), L̂ ≥ L*) ≤ P(p ∉ I(L*)) ≤ δ``, whatever the rule (the
chosen value depends on ``N``'s labels through ``p̂``; nesting is what makes
that harmless). With ``bandwidth="auto"`` each query's bandwidth depends on
``L`` and the intervals are not nested: a union bound over the bandwidths the
grid gives a query then costs a factor of their number on ``δ``; fix the
bandwidth before choosing ``L`` (``bandwidth_at=``) to avoid it; ``lipschitz="auto"``
chooses every bandwidth at its pilot L for that reason (``BoundSpec.choice_beta``). The only risk at a fixed
bandwidth is ``L̂ < L*``, a false assumption, which the test makes visible
when it has the power to.
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from scipy.fft import irfft, next_fast_len, rfft
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist
from sklearn.utils.validation import check_is_fitted

from ._validation import check_open_unit, check_positive

__all__ = [
    "ASSUMPTION_NOTE",
    "DEFAULT_FREE_SHARE",
    "LipschitzCheck",
    "LipschitzSelection",
    "check_lipschitz",
    "poisson_binomial_sf",
    "select_lipschitz",
]

DEFAULT_FREE_SHARE = 0.002
"""Default share ``r`` of held-out rows whose intervals may fail freely (Markov allowance)."""

ASSUMPTION_NOTE = (
    "L is an assumption consistent with held-out data, not a certified fact; "
    "a small held-out set has little power to reject it."
)


# ---------------------------------------------------------------------------
# Poisson-binomial distribution
# ---------------------------------------------------------------------------


def _poisson_binomial_pmf(probs: np.ndarray) -> np.ndarray:
    """Probability mass of ``Σ_i Bernoulli(probs[t, i])`` for each row ``t``, shape ``(T, n + 1)``.

    The generating function ``Π_i (1 − p_i + p_i z)`` is multiplied out as a
    balanced tree of polynomial products, each level one batched FFT
    convolution (``O(T·n·log² n)``). The rounding error of the tail sums is below
    1e-12 in absolute value up to 10⁵ terms; tiny negative values from rounding
    are set to 0.
    """
    probs = np.asarray(probs, dtype=np.float64)
    n_tests, n = probs.shape
    if n == 0:
        return np.ones((n_tests, 1))
    size = 1 << (n - 1).bit_length()  # pad to a power of two with p = 0 (the polynomial 1)
    polys = np.zeros((n_tests, size, 2))
    polys[..., 0] = 1.0
    polys[:, :n, 0] = 1.0 - probs
    polys[:, :n, 1] = probs
    while polys.shape[1] > 1:
        length = polys.shape[-1]
        out = 2 * length - 1
        nfft = next_fast_len(out, real=True)
        spectrum = rfft(polys[:, 0::2], nfft, axis=-1) * rfft(polys[:, 1::2], nfft, axis=-1)
        polys = np.clip(irfft(spectrum, nfft, axis=-1)[..., :out], 0.0, None)
    pmf = np.zeros((n_tests, n + 1))
    width = min(n + 1, polys.shape[-1])
    pmf[:, :width] = polys[:, 0, :width]
    return pmf


def _survival(pmf: np.ndarray) -> np.ndarray:
    """``sf[t, k] = P(S_t ≥ k)`` for ``k = 0 … n + 1`` from a ``(T, n + 1)`` pmf (tail sums, no cancellation)."""
    sf = np.zeros((pmf.shape[0], pmf.shape[1] + 1))
    sf[:, :-1] = np.cumsum(pmf[:, ::-1], axis=1)[:, ::-1]
    return np.minimum(sf, 1.0)


def poisson_binomial_sf(probs: Any, k: Any) -> np.ndarray | float:
    """Upper tail ``P(S ≥ k)`` of a Poisson-binomial ``S = Σ_i Bernoulli(p_i)``.

    Exact up to floating-point rounding, for any number of terms, from the
    generating function multiplied out by FFT (absolute error below 1e-12 up
    to 10⁵ terms, checked against the binomial).

    Parameters
    ----------
    probs : array-like of shape (n,)
        Success probabilities, each in ``[0, 1]``.
    k : int or array-like of int
        Thresholds; ``P(S ≥ k)`` is 1 for ``k ≤ 0`` and 0 for ``k > n``.

    Returns
    -------
    float or ndarray
        ``P(S ≥ k)``, shaped like ``k``.

    Raises
    ------
    ValueError
        ``probs`` is not one-dimensional, or holds values outside ``[0, 1]``.

    Examples
    --------
    >>> from nwbound.lipschitz_check import poisson_binomial_sf
    >>> round(float(poisson_binomial_sf([0.5, 0.5], 1)), 10)  # 1 − P(both fail)
    0.75
    >>> poisson_binomial_sf([0.2, 0.5, 0.9], [0, 3, 4]).round(10).tolist()
    [1.0, 0.09, 0.0]
    """
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"probs must be one-dimensional, got shape {p.shape}.")
    if not np.all((p >= 0.0) & (p <= 1.0)):
        raise ValueError("probs must hold probabilities in [0, 1] (no NaN).")
    kk = np.asarray(k)
    if not np.issubdtype(kk.dtype, np.integer):
        raise ValueError(f"k must be an integer or an array of integers, got {k!r}.")
    sf = _survival(_poisson_binomial_pmf(p[None, :]))[0]
    out = sf[np.clip(kk, 0, p.shape[0] + 1)]
    return float(out) if out.ndim == 0 else out


def _null_survival(ceilings: np.ndarray, rows: np.ndarray, free: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(sf, n_free, expected)``: ``sf[t, k] = P(PB_t ≥ k)`` of the kept ceilings of each test.

    Test ``t`` keeps the ``|R_t| − m′_t`` largest ceilings of its rows, ``m′_t = min(free, |R_t|)``
    (``n_free``); ``expected`` is ``Σ_{j∈R_t} c_j``.
    """
    n_rows = rows.sum(axis=1)
    n_free = np.minimum(free, n_rows)
    keep = n_rows - n_free
    ordered = -np.sort(-np.where(rows, ceilings, -1.0), axis=1)  # descending, rows outside R last
    width = int(keep.max(initial=0))
    ordered = ordered[:, :width]
    kept = np.where(np.arange(width)[None, :] < keep[:, None], ordered, 0.0)
    sf = _survival(_poisson_binomial_pmf(kept))  # (T, width + 2)
    expected = np.where(rows, ceilings, 0.0).sum(axis=1)
    return sf, n_free, expected


def _tail_at(sf: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``sf[t, k_t]``, with ``k`` clipped to the table (``P(PB ≥ k) = 1`` for ``k ≤ 0``)."""
    return sf[np.arange(sf.shape[0]), np.clip(k, 0, sf.shape[1] - 1)]


def _thresholds(sf: np.ndarray, n_free: np.ndarray, level: float) -> np.ndarray:
    """Smallest ``t`` with ``P(m′ + PB > t) ≤ level`` (exists: the last column of ``sf`` is 0)."""
    return n_free + np.argmax(sf[:, 1:] <= level, axis=1)


def _dominating_tests(
    ceilings: np.ndarray, rows: np.ndarray, observed: np.ndarray, free: int, level: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tail probabilities and thresholds of ``T`` counts against ``m′ + PB(kept ceilings)``.

    Parameters
    ----------
    ceilings : (T, n) ceilings ``c_j`` (values outside ``rows`` are ignored)
    rows : (T, n) bool, which rows each count runs over
    observed : (T,) observed counts
    free : the allowance ``m`` (rows that may fail freely)
    level : per-test level ``α_i``

    Returns
    -------
    p_value : (T,) ``P(m′ + PB ≥ observed)`` with ``m′ = min(m, |R|)``; the PB keeps the
        ``|R| − m′`` largest ceilings (the worst case over which rows failed).
    threshold : (T,) the smallest ``t`` with ``P(m′ + PB > t) ≤ level``: reject when observed > t.
    expected : (T,) ``Σ_{j∈R} c_j`` (the count's mean bound without the allowance).
    """
    sf, n_free, expected = _null_survival(ceilings, rows, free)
    p_value = _tail_at(sf, observed - n_free)
    threshold = _thresholds(sf, n_free, level)
    return p_value, threshold, expected


CONTRAST_FRACTIONS = (0.1, 0.3)
"""Shares ``q`` of the held-out rows in each end of a contrast test (``q·n`` rows of highest and of
lowest ``p̂_c``)."""

CONTRAST_MAX_PAIRS = 400
"""Most pairs in one contrast test (the matching is ``O(k³)``); beyond it the most extreme rows are kept."""


_DISTANCE_ROUNDING = 1.0 + 1e-9
"""Relative allowance for the rounding of the matched distances (``cdist`` errs by a few ulp per
coordinate), so that ``μ₀`` is never below its exact value."""


def _kl_bernoulli(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``kl(a ‖ b) = a·log(a/b) + (1 − a)·log((1 − a)/(1 − b))``, with ``0·log 0 = 0``."""
    a = np.asarray(a, dtype=np.float64)
    b = np.clip(np.asarray(b, dtype=np.float64), 1e-300, 1.0 - 1e-16)
    with np.errstate(divide="ignore", invalid="ignore"):
        first = np.where(a > 0.0, a * np.log(a / b), 0.0)
        second = np.where(a < 1.0, (1.0 - a) * np.log((1.0 - a) / (1.0 - b)), 0.0)
    return first + second


def _mean_bounded_sf(n_terms: np.ndarray, mean_bound: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Upper bound on ``P(S ≥ s)`` for ``S`` a sum of ``N`` independent Bernoulli with ``E S ≤ μ₀``.

    Chernoff's bound (Hoeffding 1963, Theorem 1): ``exp(−N·kl(s/N ‖ μ₀/N))`` for ``s > μ₀``, and 1
    otherwise. It holds for every such sum, so it is a valid p-value under the composite null.
    """
    n_terms = np.asarray(n_terms, dtype=np.float64)
    mean_bound = np.asarray(mean_bound, dtype=np.float64)
    observed = np.asarray(observed, dtype=np.float64)
    safe = np.maximum(n_terms, 1.0)
    mu = np.clip(mean_bound / safe, 0.0, 1.0)
    tail = np.exp(-n_terms * _kl_bernoulli(observed / safe, mu))
    return np.where((observed > mean_bound) & (n_terms > 0), np.minimum(tail, 1.0), 1.0)


def _space_coordinates(model: Any, X: Any) -> np.ndarray | None:
    """The held-out rows in the coordinates the model computes Euclidean distances in, or None
    where there is no single such space (a cross-fitted model: two maps)."""
    if getattr(model, "cross_fit_models_", None) is not None:
        return None
    space = getattr(model, "metric_", None)
    if space is None and model.get_params().get("metric") is not None:
        return None
    Z = space.transform(X) if space is not None else np.asarray(X, dtype=np.float64)
    Z = np.asarray(Z, dtype=np.float64)
    return Z.reshape(Z.shape[0], -1)


def _contrast_strata(Z: np.ndarray, proba: np.ndarray, classes_tested: Sequence[int]) -> list[dict[str, Any]]:
    """The contrast tests' strata, from the inputs and ``p̂`` (so from ``N``), never ``H``'s labels.

    For each class ``c`` and share ``q``: ``A`` the ``k`` rows of highest ``p̂_c``, ``B`` the ``k``
    of lowest (``k = min(⌊q·n⌋, CONTRAST_MAX_PAIRS)``, disjoint), matched one to one so that the sum
    of distances is least (an optimal assignment). Each stratum holds the class, the share, the rows
    of ``A`` and their partners in ``B``, and the matched distances.
    """
    n = Z.shape[0]
    strata = []
    for c in classes_tested:
        order = np.argsort(-proba[:, c], kind="stable")
        for q in CONTRAST_FRACTIONS:
            k = min(int(math.floor(q * n)), CONTRAST_MAX_PAIRS, n // 2)
            if k < 1:
                continue
            high, low = order[:k], order[n - k:]
            dist = cdist(Z[high], Z[low])
            rows, cols = linear_sum_assignment(dist)
            strata.append({"class": c, "share": q, "high": high[rows], "low": low[cols], "distance": dist[rows, cols]})
    return strata


def _contrast_tests(strata: list[dict[str, Any]], labels: np.ndarray, lipschitz: float) -> tuple[
        np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""``(n_terms, mean_bound, observed, smallest_p)`` of each contrast test at ``L``.

    ``S = Σ_{j∈A} 1[y_j = c] + Σ_{k∈B} 1[y_k ≠ c]`` has mean ``|A| + Σ_pairs (p_c(x_j) − p_c(x_k))``
    ``≤ |A| + Σ_pairs min(1, L·d(x_j, x_k))`` when ``p_c`` is ``L``-Lipschitz.
    """
    n_terms = np.array([2 * s["high"].size for s in strata], dtype=np.float64)
    mean_bound = np.array(
        [s["high"].size + np.minimum(1.0, lipschitz * s["distance"] * _DISTANCE_ROUNDING).sum() for s in strata],
        dtype=np.float64,
    )
    observed = np.array(
        [np.count_nonzero(labels[s["high"]] == s["class"]) + np.count_nonzero(labels[s["low"]] != s["class"])
         for s in strata], dtype=np.float64,
    )
    smallest = _mean_bounded_sf(n_terms, mean_bound, n_terms)
    return n_terms, mean_bound, observed, smallest


# ---------------------------------------------------------------------------
# result objects
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LipschitzCheck:
    """Outcome of :func:`check_lipschitz` for one assumed constant.

    Attributes
    ----------
    lipschitz : float or None
        The ``L`` tested (units of the distances the classifier computes);
        None when the model's own margin assumption was tested.
    margin : float or None
        The margin ``γ`` tested (``β = 1/γ``), or None.
    n_rows : int
        Held-out rows used.
    n_certified : int
        Rows certified at ``model_delta`` and this ``L``.
    errors_certified : int
        Wrong predictions among them.
    expected_errors : float
        Sum of their error ceilings (``1 − lower`` of the predicted class, at
        the test's ``delta``): the most errors the assumption expects.
    allowance : int
        ``m``: rows whose interval may fail freely (Markov allowance).
    threshold : int
        Largest number of certified errors the certified-rows test accepts.
    p_value : float
        Bonferroni-adjusted: ``min(1, T · min_i p_i)`` over the ``T`` tests
        used; ``rejected`` when it is ``≤ alpha − beta``.
    rejected : bool
        Whether the held-out data reject this ``L``.
    rejected_by : tuple of str
        Names of the tests that rejected (empty when not rejected).
    alpha : float
        Level: the probability of rejecting an ``L`` that is true is ``≤ alpha``.
    beta : float
        The part of ``alpha`` spent on the Markov allowance.
    delta : float
        Failure probability of the intervals the test uses (simultaneous over classes).
    model_delta : float
        The ``delta`` that defines which rows count as certified: the model's
        own (``certified_at="model"``) or ``delta`` (``"test"``).
    free_share : float
        ``r``: ``m = ⌊r · n_rows⌋``.
    tests : tuple of dict
        One dict per test: ``test``, ``kind`` (``"count"`` or ``"contrast"``),
        ``rows``, ``observed``, ``expected`` (sum of ceilings; for a contrast
        the bound ``μ₀`` on its mean), ``threshold``, ``p_value``, ``used``
        (False for a test that could not reject whatever the labels; it takes
        no share of the level), ``rejected``. A contrast also records its
        stratum: ``pairs`` (``k``), ``terms`` (``2k``), ``mean_bound`` and
        ``mean_distance`` (of the matched pairs).

    Examples
    --------
    >>> from nwbound.lipschitz_check import LipschitzCheck
    >>> c = LipschitzCheck(lipschitz=1.0, margin=None, n_rows=10, n_certified=2, errors_certified=0,
    ...                    expected_errors=0.1, allowance=0, threshold=1, p_value=1.0, rejected=False,
    ...                    rejected_by=(), alpha=0.05, beta=0.025, delta=0.0025, model_delta=0.05,
    ...                    free_share=0.02)
    >>> "not a certified fact" in str(c)
    True
    """

    lipschitz: float | None
    margin: float | None
    n_rows: int
    n_certified: int
    errors_certified: int
    expected_errors: float
    allowance: int
    threshold: int
    p_value: float
    rejected: bool
    rejected_by: tuple[str, ...]
    alpha: float
    beta: float
    delta: float
    model_delta: float
    free_share: float
    tests: tuple[dict[str, Any], ...] = field(default=(), repr=False)

    @property
    def assumption(self) -> str:
        """``"L = …"`` or ``"γ = …"``."""
        return f"γ = {self.margin:g}" if self.margin is not None else f"L = {self.lipschitz:g}"

    def __str__(self) -> str:
        verdict = "REJECTED by " + ", ".join(self.rejected_by) if self.rejected else "not rejected"
        lines = [
            f"Held-out check of {self.assumption}: {verdict}",
            f"  {self.n_rows} held-out rows, {self.n_certified} certified at δ = {self.model_delta:g}; "
            f"{self.errors_certified} errors among them (ceilings sum to {self.expected_errors:.2f}; "
            f"accepted up to {self.threshold})",
            f"  adjusted p-value {self.p_value:.3g} over {sum(t['used'] for t in self.tests)} test(s) (rejects at "
            f"<= alpha - beta = {self.alpha - self.beta:g}); level alpha = "
            f"{self.alpha:g} (beta = {self.beta:g} for up to {self.allowance} rows whose interval at "
            f"δ = {self.delta:.3g} fails)",
        ]
        shown = self.tests if len(self.tests) <= 9 else tuple(t for t in self.tests if t["rejected"])
        for t in shown:
            mark = "  reject" if t["rejected"] else ("" if t["used"] else "  (cannot reject: not used)")
            lines.append(
                f"    {t['test']}: {t['observed']} observed, ceilings sum {t['expected']:.2f}, "
                f"accepted up to {t['threshold']}, p = {t['p_value']:.3g}{mark}"
            )
        if len(shown) < len(self.tests):
            lines.append(f"    ({len(self.tests) - len(shown)} more tests, none rejected: see .tests)")
        lines.append("  " + ASSUMPTION_NOTE)
        return "\n".join(lines)


@dataclass(frozen=True)
class LipschitzSelection:
    """Outcome of :func:`select_lipschitz`.

    Attributes
    ----------
    grid : tuple of float
        The candidate constants, ascending.
    checks : tuple of LipschitzCheck
        One check per grid value, in grid order.
    chosen : float or None
        The smallest grid value above every rejected one; None when the
        largest grid value is rejected (``all_rejected``).
    all_rejected : bool
        True when no grid value survives: the grid does not reach an ``L`` the
        held-out data allow. Extend it upward (or reconsider the space).
    alpha, beta : float
        Level of each check, and its Markov share.

    Examples
    --------
    >>> from nwbound.lipschitz_check import LipschitzSelection
    >>> s = LipschitzSelection(grid=(1.0,), checks=(), chosen=1.0, all_rejected=False, alpha=0.05, beta=0.025)
    >>> s.chosen
    1.0
    """

    grid: tuple[float, ...]
    checks: tuple[LipschitzCheck, ...]
    chosen: float | None
    all_rejected: bool
    alpha: float
    beta: float

    def table(self) -> list[dict[str, Any]]:
        """One row per grid value: ``lipschitz``, ``n_certified``, ``errors_certified``,
        ``expected_errors``, ``p_value``, ``rejected``, ``chosen``."""
        return [
            {
                "lipschitz": c.lipschitz,
                "n_certified": c.n_certified,
                "errors_certified": c.errors_certified,
                "expected_errors": c.expected_errors,
                "p_value": c.p_value,
                "rejected": c.rejected,
                "chosen": self.chosen is not None and c.lipschitz == self.chosen,
            }
            for c in self.checks
        ]

    def __str__(self) -> str:
        head = (
            f"L chosen on held-out rows: {self.chosen:g}"
            if self.chosen is not None
            else "Every L on the grid is rejected by the held-out rows: no L chosen (extend the grid upward)"
        )
        lines = [head, f"  {'L':>10} {'certified':>9} {'errors':>6} {'ceilings':>8} {'p-value':>8}  verdict"]
        for row in self.table():
            verdict = "rejected" if row["rejected"] else "not rejected"
            if row["chosen"]:
                verdict += "  <- chosen"
            lines.append(
                f"  {row['lipschitz']:>10.4g} {row['n_certified']:>9d} {row['errors_certified']:>6d} "
                f"{row['expected_errors']:>8.2f} {row['p_value']:>8.3g}  {verdict}"
            )
        lines.append(f"  each check at level alpha = {self.alpha:g}; " + ASSUMPTION_NOTE)
        return "\n".join(lines)


# ---------------------------------------------------------------------------
# the checks
# ---------------------------------------------------------------------------


def _check_model(model: Any) -> None:
    if not (hasattr(model, "predict_interval") and hasattr(model, "get_params")):
        raise TypeError(
            "model must be a fitted nwbound bounded classifier (NadarayaWatsonClassifier or "
            f"DyadicClassifier), got {type(model).__name__}."
        )
    check_is_fitted(model)


def _check_levels(alpha: Any, beta: Any, free_share: Any) -> tuple[float, float, float]:
    alpha = check_open_unit(alpha, "alpha")
    if beta is None:
        beta = alpha / 2
    elif isinstance(beta, bool) or not isinstance(beta, numbers.Real) or not (0.0 < float(beta) < alpha):
        raise ValueError(
            f"beta must be a number with 0 < beta < alpha = {alpha:g} (the share of alpha spent on the "
            f"Markov allowance), got {beta!r}; the default None uses alpha/2."
        )
    if isinstance(free_share, bool) or not isinstance(free_share, numbers.Real) or not (0.0 <= free_share < 1.0):
        raise ValueError(f"free_share must be a number with 0 <= free_share < 1, got {free_share!r}.")
    free_share = float(free_share)
    return alpha, float(beta), free_share


def _check_rows(model: Any, X: Any, y: Any) -> tuple[np.ndarray, int]:
    """Labels as column indices into ``model.classes_``, and the row count."""
    y_arr = np.asarray(y)
    if y_arr.ndim != 1:
        raise ValueError(f"y must be one-dimensional (one label per row of X), got shape {y_arr.shape}.")
    n_x = X.shape[0] if hasattr(X, "shape") else len(X)
    if n_x != y_arr.shape[0]:
        raise ValueError(f"X has {n_x} rows but y has {y_arr.shape[0]} labels; give one label per row.")
    if n_x == 0:
        raise ValueError("X is empty: the check needs held-out rows.")
    classes = np.asarray(model.classes_)
    seen = np.isin(y_arr, classes)
    if not seen.all():
        unseen = sorted({str(v) for v in y_arr[~seen]})[:10]
        raise ValueError(
            f"y holds labels the model never saw in training: {unseen}; the model's classes are "
            f"{classes.tolist()}. Drop those rows or refit on data that include them."
        )
    uniques, inverse = np.unique(y_arr, return_inverse=True)
    lookup = {v: i for i, v in enumerate(classes.tolist())}
    index = np.array([lookup[v] for v in uniques.tolist()], dtype=np.intp)[inverse.reshape(-1)]
    return index.astype(np.intp), int(n_x)


def _check_flag(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}.")
    return bool(value)


def _check_certified_at(value: Any) -> str:
    if value not in ("model", "test"):
        raise ValueError(f"certified_at must be 'model' or 'test', got {value!r}.")
    return value


def _check_values(lipschitz: Any) -> tuple[list[float] | None, bool]:
    """``(values, single)``: the L values to test (None: the model's own) and whether one was given."""
    if lipschitz is None:
        return None, True
    if isinstance(lipschitz, numbers.Real) and not isinstance(lipschitz, bool):
        return [check_positive(lipschitz, "lipschitz")], True
    if isinstance(lipschitz, str):
        raise ValueError(f"lipschitz must be None, a number > 0 or a sequence of them, got {lipschitz!r}.")
    try:
        values = [check_positive(v, "lipschitz") for v in lipschitz]
    except TypeError:
        raise ValueError(f"lipschitz must be None, a number > 0 or a sequence of them, got {lipschitz!r}.") from None
    if not values:
        raise ValueError("lipschitz is an empty sequence: give at least one value.")
    return values, False


def _tightened(lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each class's interval intersected with what the others imply through ``Σ_c p_c = 1``."""
    lo = np.maximum(lower, 1.0 - (upper.sum(axis=1, keepdims=True) - upper))
    hi = np.minimum(upper, 1.0 - (lower.sum(axis=1, keepdims=True) - lower))
    return np.clip(lo, 0.0, 1.0), np.clip(hi, 0.0, 1.0)


def _one_check(
    test_iv: Any, model_iv: Any, labels: np.ndarray, classes: np.ndarray, *, free: int, per_class: bool,
    alpha: float, beta: float, strata: list[dict[str, Any]] | None = None, lipschitz: float | None = None,
) -> dict[str, Any]:
    n, n_classes = test_iv.proba.shape
    rows = np.arange(n)
    top = np.argmax(model_iv.proba, axis=1)
    certified = np.asarray(model_iv.certified, dtype=bool)
    wrong = labels != top
    lo, hi = _tightened(test_iv.lower, test_iv.upper)
    names = ["certified rows: errors"]
    ceilings = [1.0 - lo[rows, top]]
    masks = [certified]
    observed = [int(np.count_nonzero(wrong & certified))]
    if per_class:
        # Each class's count is tested within the rows predicted c and within the others (a choice
        # from the inputs and N only). The usual bias has one sign on each side of a decision
        # boundary (p̂ pulled toward the local mean), and would cancel in a count over all rows.
        tested = [1] if n_classes == 2 else range(n_classes)  # two classes: class 0's tests are the same
        for c in tested:
            label = classes.tolist()[c]
            is_c = labels == c
            for group, mask in (("predicted", top == c), ("not predicted", top != c)):
                where = f"class {label!r} in rows {group} {label!r}"
                names += [f"{where}: too many", f"{where}: too few"]
                ceilings += [hi[:, c], 1.0 - lo[:, c]]
                masks += [mask, mask]
                observed += [int(np.count_nonzero(is_c & mask)), int(np.count_nonzero(~is_c & mask))]
    observed_arr = np.asarray(observed)
    sf, n_free, expected = _null_survival(np.vstack(ceilings), np.vstack(masks), free)
    p_value = _tail_at(sf, observed_arr - n_free)
    # Tests that cannot reject whatever the labels (even every row counted is not rare enough under
    # the null) take no share of the level. The choice uses the ceilings only, never H's labels.
    smallest = _tail_at(sf, np.vstack(masks).sum(axis=1) - n_free)
    n_counts = len(names)
    contrast: list[dict[str, Any]] = []
    if strata and lipschitz is not None:
        # Contrast tests: labels at the two ends of p̂_c against what L allows between matched rows.
        # They need neither the intervals nor the allowance; they join the same Bonferroni family.
        c_terms, c_bound, c_observed, c_smallest = _contrast_tests(strata, labels, lipschitz)
        c_p = _mean_bounded_sf(c_terms, c_bound, c_observed)
        for st, terms, bound, obs in zip(strata, c_terms, c_bound, c_observed):
            label = classes.tolist()[st["class"]]
            names.append(f"contrast of class {label!r}, top and bottom {st['share']:g} of p̂")
            observed.append(int(obs))
            contrast.append({"pairs": int(st["high"].size), "terms": int(terms), "mean_bound": float(bound),
                             "mean_distance": float(st["distance"].mean())})
        p_value = np.concatenate([p_value, c_p])
        smallest = np.concatenate([smallest, c_smallest])
        expected = np.concatenate([expected, c_bound])
    used = np.ones(len(names), dtype=bool)
    while True:  # each pass only drops tests, and a smaller set raises the level: it ends
        kept = used & (smallest <= (alpha - beta) / max(int(used.sum()), 1))
        if np.array_equal(kept, used):
            break
        used = kept
    level = (alpha - beta) / max(int(used.sum()), 1)
    threshold = _thresholds(sf, n_free, level)
    if contrast:
        counts = np.arange(max(d["terms"] for d in contrast) + 1)
        for d in contrast:  # the largest S whose bound on P(S ≥ s + 1) stays above the level
            k = counts[: d["terms"] + 1]
            ok = _mean_bounded_sf(np.full(k.size, d["terms"]), np.full(k.size, d["mean_bound"]), k + 1) > level
            threshold = np.append(threshold, int(np.flatnonzero(ok).max(initial=-1)) + 1 if ok.any() else 0)
    rejected = used & (p_value <= level)
    sizes = [int(mask.sum()) for mask in masks] + [2 * d["pairs"] for d in contrast]
    tests = tuple(
        {
            "test": name,
            "rows": size,
            "observed": obs,
            "expected": float(exp),
            "threshold": int(t),
            "p_value": float(p),
            "used": bool(u),
            "rejected": bool(r),
            **({"kind": "count"} if i < n_counts else {"kind": "contrast", **contrast[i - n_counts]}),
        }
        for i, (name, size, obs, exp, t, p, u, r) in enumerate(zip(
            names, sizes, observed, expected, threshold, p_value, used, rejected
        ))
    )
    return {
        "n_certified": int(certified.sum()),
        "errors_certified": observed[0],
        "expected_errors": float(expected[0]),
        "threshold": int(threshold[0]),
        "p_value": float(min(1.0, used.sum() * float(p_value[used].min()))) if used.any() else 1.0,
        "rejected": bool(rejected.any()),
        "rejected_by": tuple(t["test"] for t in tests if t["rejected"]),
        "tests": tests,
    }


def _intervals(model: Any, X: Any, bounds: dict, bandwidth_at: float | None) -> dict:
    """Every setting's intervals from one pass of kernel sums; with ``bandwidth_at`` and a grid of
    bandwidths, each query keeps the bandwidth chosen at ``lipschitz=bandwidth_at`` for all settings."""
    grid = getattr(model, "bandwidths_", None)
    if bandwidth_at is None or grid is None or np.size(grid) < 2:
        return model.predict_interval(X, bounds=bounds)
    ranking = model.bandwidth_ranking(X)
    column = model.choose_bandwidths(ranking, bounds={"pin": {"lipschitz": bandwidth_at}})["pin"]
    stats = model.kernel_statistics(X, bounds=bounds, bandwidth_index=column)
    return model.interval_from_statistics(stats, bounds)


def _run_checks(
    model: Any, X: Any, y: Any, values: list[float] | None, *, alpha: float, beta: float,
    free_share: float, per_class: bool, certified_at: str = "model", bandwidth_at: float | None = None,
    contrast: bool = True,
) -> list[LipschitzCheck]:
    labels, n = _check_rows(model, X, y)
    free = int(math.floor(free_share * n))
    delta_test = min(beta * (free + 1) / n, 0.5)  # P(|F| > m) ≤ n·δ_t/(m + 1) = β
    test_setting = {"delta": delta_test, "coverage": "simultaneous"}
    if values is None:  # the model's own assumption, whatever form it takes
        beta_own = getattr(model, "beta_", None)
        if beta_own is None:
            raise ValueError(
                "model has no assumption to check (lipschitz=None and margin=None): pass lipschitz=L "
                "(or a list of values) to check_lipschitz."
            )
        margin = model.get_params().get("margin")
        described = [(None, float(margin)) if margin is not None else (float(beta_own), None)]
        bounds: dict[Any, dict[str, Any]] = {("test", 0): dict(test_setting)}
        if certified_at == "model":
            bounds[("model", 0)] = {}
    else:
        described = [(float(v), None) for v in values]
        bounds = {}
        for i, v in enumerate(values):
            bounds[("test", i)] = {"lipschitz": v, **test_setting}
            if certified_at == "model":
                bounds[("model", i)] = {"lipschitz": v}
    intervals = _intervals(model, X, bounds, bandwidth_at)
    classes = np.asarray(model.classes_)
    model_delta = float(model.get_params()["delta"]) if certified_at == "model" else delta_test
    strata = None
    if contrast and described[0][0] is not None:  # a Lipschitz assumption (not a margin)
        Z = _space_coordinates(model, X)
        if Z is not None:
            strata = _contrast_strata(Z, np.asarray(intervals[("test", 0)].proba),
                                      [1] if classes.size == 2 else range(classes.size))
    checks = []
    for i, (lip, margin) in enumerate(described):
        res = _one_check(
            intervals[("test", i)], intervals[("model" if certified_at == "model" else "test", i)], labels,
            classes, free=free,
            per_class=per_class, alpha=alpha, beta=beta, strata=strata, lipschitz=lip,
        )
        checks.append(
            LipschitzCheck(
                lipschitz=lip, margin=margin, n_rows=n, allowance=free, alpha=alpha, beta=beta,
                delta=delta_test, model_delta=model_delta, free_share=free_share, **res,
            )
        )
    return checks


def check_lipschitz(
    model: Any,
    X: Any,
    y: Any,
    *,
    lipschitz: float | Sequence[float] | None = None,
    alpha: float = 0.05,
    beta: float | None = None,
    per_class: bool = True,
    free_share: float = DEFAULT_FREE_SHARE,
    certified_at: str = "model",
    bandwidth_at: float | None = None,
    contrast: bool = True,
) -> LipschitzCheck | list[LipschitzCheck]:
    r"""Test an assumed Lipschitz constant on held-out rows.

    Rejects ``L`` when, on rows whose labels did not enter the model's kernel
    sums, certified predictions err more often than their error ceilings
    allow, or (``per_class``) a class occurs more or less often than its
    intervals allow, or (``contrast``) the labels at the two ends of ``p̂_c``
    differ by more than ``L`` allows across the distances between them. The
    probability of rejecting an ``L`` that is true (at least the real
    constant) is at most ``alpha``. See
    :mod:`nwbound.lipschitz_check` for the test and its proof.

    Not rejecting ``L`` does not certify it: **L is an assumption consistent
    with held-out data, not a certified fact**, and a small held-out set has
    little power to reject it.

    Parameters
    ----------
    model : NadarayaWatsonClassifier or DyadicClassifier
        Fitted. Its kernel sums must not contain the rows of ``X``.
    X : array-like of shape (n, n_features)
        Held-out inputs, in the units the model takes.
    y : array-like of shape (n,)
        Their labels, among ``model.classes_``.
    lipschitz : float, sequence of float or None, default=None
        The ``L`` to test, in the units of the distances the model computes
        (after its metric, if any). None: the model's own assumption (its
        ``lipschitz``, or its ``margin`` ``γ`` as ``β = 1/γ``). A sequence:
        several, from one pass of kernel sums.
    alpha : float, default=0.05
        Level of the test: ``P(reject a true L) ≤ alpha``, all parts included.
    beta : float or None, default=None
        The part of ``alpha`` spent on the rows whose intervals fail (Markov's
        inequality); the rest is shared by the count tests (Bonferroni).
        None: ``alpha/2``. Must satisfy ``0 < beta < alpha``.
    per_class : bool, default=True
        Also test each class's count over all rows against its intervals
        (both sides). This gives power when few rows are certified.
    free_share : float, default=0.002
        ``r`` with ``0 ≤ r < 1``: up to ``m = ⌊r·n⌋`` rows may have failed
        intervals (they may err freely). The test's intervals use
        ``δ_t = β·(m + 1)/n`` so that ``P(more than m fail) ≤ β``. Larger
        ``r``: narrower intervals but more free errors in every count; the
        default keeps ``m`` small (0 below 500 rows), which gave the most
        power on the known-p fields tried.
    certified_at : {"model", "test"}, default="model"
        Which rows the certified-errors test counts: those certified at the
        model's own ``delta`` (what its users see), or those certified by the
        test's own intervals at ``δ_t`` (fewer rows; half the interval work,
        since the model's setting is then not computed).
    bandwidth_at : float or None, default=None
        Only for a model with ``bandwidth="auto"`` (a grid of bandwidths).
        None: each ``L`` uses the bandwidths its own setting chooses (what the
        model predicts at that ``L``). A value: each query's bandwidth is
        chosen once, at ``lipschitz=bandwidth_at`` (label-free), and kept for
        every ``L`` tested, so the intervals are nested in ``L`` — what
        :func:`select_lipschitz` needs to keep ``δ`` (see
        :mod:`nwbound.lipschitz_check`). Ignored at a fixed bandwidth.
    contrast : bool, default=True
        Also run the contrast tests: for each class, the labels of the rows
        of highest and lowest ``p̂_c`` (shares 0.1 and 0.3), matched at least
        distance, against the difference that ``L`` allows across the
        matched distances. They test the Lipschitz condition directly and see
        a too-small ``L`` that the interval counts miss (intervals wrong by a
        little on a few per cent of queries). They share the level with the
        counts. Not run for a margin assumption or a cross-fitted model (no
        single space). False: the counts only.

    Returns
    -------
    LipschitzCheck or list of LipschitzCheck
        One check, or one per value when ``lipschitz`` is a sequence.

    Raises
    ------
    TypeError
        ``model`` is not a bounded classifier.
    sklearn.exceptions.NotFittedError
        ``model`` is not fitted.
    ValueError
        ``X`` and ``y`` differ in length or are empty, ``y`` has labels the
        model never saw, ``alpha``, ``beta``, ``free_share`` or ``lipschitz``
        are out of range, or the model has no assumption and none is given.

    See Also
    --------
    select_lipschitz : the smallest ``L`` on a grid that held-out rows do not reject.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.assumptions import check_lipschitz
    >>> from nwbound.datasets import make_lipschitz_logistic
    >>> data = make_lipschitz_logistic(3000, lipschitz=0.5, n_features=1, scale="box", random_state=0)
    >>> data.lipschitz  # the true constant, in the units of X
    10.0
    >>> X_fit, y_fit, X_held, y_held = data.X[:2000], data.y[:2000], data.X[2000:], data.y[2000:]
    >>> clf = NadarayaWatsonClassifier(bandwidth=0.3, lipschitz=10.0).fit(X_fit, y_fit)
    >>> check = check_lipschitz(clf, X_held, y_held)  # the model's own L
    >>> check.lipschitz, check.n_rows, check.rejected
    (10.0, 1000, False)
    >>> check_lipschitz(clf, X_held, y_held, lipschitz=0.5).rejected  # 20 times too small
    True
    """
    _check_model(model)
    alpha, beta, free_share = _check_levels(alpha, beta, free_share)
    values, single = _check_values(lipschitz)
    if not isinstance(per_class, (bool, np.bool_)):
        raise ValueError(f"per_class must be True or False, got {per_class!r}.")
    checks = _run_checks(
        model, X, y, values, alpha=alpha, beta=beta, free_share=free_share, per_class=bool(per_class),
        certified_at=_check_certified_at(certified_at),
        bandwidth_at=check_positive(bandwidth_at, "bandwidth_at", allow_none=True),
        contrast=_check_flag(contrast, "contrast"),
    )
    return checks[0] if single else checks


def select_lipschitz(
    model: Any,
    X: Any,
    y: Any,
    grid: Sequence[float],
    *,
    alpha: float = 0.05,
    beta: float | None = None,
    per_class: bool = True,
    free_share: float = DEFAULT_FREE_SHARE,
    certified_at: str = "model",
    bandwidth_at: float | None = None,
    contrast: bool = True,
) -> LipschitzSelection:
    r"""The smallest ``L`` on a grid that held-out rows do not reject.

    Each grid value is tested with :func:`check_lipschitz` (all from one pass
    of kernel sums). Since the assumption at ``L`` implies it at every larger
    value, rejecting ``L`` rejects every smaller value too: the chosen value
    is the smallest grid value **above every rejected one** (so the choice is
    monotone: more rejections never lower it).

    Choosing ``L`` this way keeps the bound valid whenever the chosen value is
    at least the true constant, because at a fixed bandwidth the intervals are
    nested in ``L``. With ``bandwidth="auto"`` pass ``bandwidth_at`` (and
    predict with that bandwidth choice) to keep them nested; otherwise a union
    bound over the bandwidths the grid gives each query applies. The risk is
    a chosen value below the true constant, which a small held-out set may
    miss: the contrasts catch a constant several times too small where ``p``
    changes by much across the held-out rows, not one wrong only in a small
    region (measured figures in the user guide). The
    chosen ``L`` is an assumption consistent with held-out data, not a
    certified fact.

    Parameters
    ----------
    model : NadarayaWatsonClassifier or DyadicClassifier
        Fitted; its kernel sums must not contain the rows of ``X``.
    X : array-like of shape (n, n_features)
        Held-out inputs.
    y : array-like of shape (n,)
        Their labels.
    grid : sequence of float
        Candidate constants (> 0); sorted here, duplicates dropped.
    alpha, beta, per_class, free_share, certified_at, bandwidth_at, contrast
        As in :func:`check_lipschitz`, for each grid value. With several grid
        values at or above the true constant, the chance that one of them is
        rejected (which only makes the choice more cautious) can exceed
        ``alpha``.

    Returns
    -------
    LipschitzSelection
        ``chosen``, ``all_rejected``, and every grid value's check.
        When every value is rejected, ``chosen`` is None, ``all_rejected`` is
        True and a ``UserWarning`` says so: there is no silent fallback.

    Raises
    ------
    ValueError, TypeError, sklearn.exceptions.NotFittedError
        As :func:`check_lipschitz`; also an empty ``grid``.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.assumptions import select_lipschitz
    >>> from nwbound.datasets import make_lipschitz_logistic
    >>> data = make_lipschitz_logistic(3000, lipschitz=0.5, n_features=1, scale="box", random_state=0)
    >>> clf = NadarayaWatsonClassifier(bandwidth=0.3, lipschitz=10.0).fit(data.X[:2000], data.y[:2000])
    >>> sel = select_lipschitz(clf, data.X[2000:], data.y[2000:], [0.5, 2.0, 10.0])
    >>> [row["rejected"] for row in sel.table()], sel.chosen
    ([True, False, False], 2.0)
    """
    _check_model(model)
    alpha, beta, free_share = _check_levels(alpha, beta, free_share)
    if isinstance(grid, (str, numbers.Real)):
        raise ValueError(f"grid must be a sequence of numbers > 0, got {grid!r}.")
    values, _ = _check_values(list(grid))
    assert values is not None
    values = sorted(set(values))
    if not isinstance(per_class, (bool, np.bool_)):
        raise ValueError(f"per_class must be True or False, got {per_class!r}.")
    checks = _run_checks(
        model, X, y, values, alpha=alpha, beta=beta, free_share=free_share, per_class=bool(per_class),
        certified_at=_check_certified_at(certified_at),
        bandwidth_at=check_positive(bandwidth_at, "bandwidth_at", allow_none=True),
        contrast=_check_flag(contrast, "contrast"),
    )
    rejected = [i for i, c in enumerate(checks) if c.rejected]
    start = rejected[-1] + 1 if rejected else 0
    all_rejected = start >= len(values)
    chosen = None if all_rejected else values[start]
    if all_rejected:
        warnings.warn(
            f"Every L on the grid (up to {values[-1]:g}) is rejected by the {checks[0].n_rows} held-out rows: "
            "no L chosen. Extend the grid upward, or reconsider the space the classifier works in.",
            UserWarning,
            stacklevel=2,
        )
    return LipschitzSelection(
        grid=tuple(values), checks=tuple(checks), chosen=chosen, all_rejected=all_rejected, alpha=alpha, beta=beta
    )
