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

The code lives in private modules: ``_tails`` (the Poisson-binomial tail and
the count tests' null), ``_contrast`` (the contrast strata and tests), ``_results``
(:class:`LipschitzCheck`, :class:`LipschitzSelection`), ``_inputs`` (input checks),
``_run`` (one check at each ``L``, every ``L`` from one pass of kernel sums; of the model's own
setting only ``p̂`` and the certified mask are computed, searching the band-Chernoff ends only as far
as that mask needs: :meth:`nwbound.bounds.BoundSpec.certified`) and ``_api`` (:func:`check_lipschitz`,
:func:`select_lipschitz`).
"""

from __future__ import annotations

from ._api import DEFAULT_FREE_SHARE, check_lipschitz, select_lipschitz
from ._contrast import CONTRAST_FRACTIONS, CONTRAST_MAX_PAIRS, _contrast_strata, _contrast_tests
from ._results import ASSUMPTION_NOTE, LipschitzCheck, LipschitzSelection
from ._tails import _dominating_tests, _mean_bounded_sf, poisson_binomial_sf

__all__ = [
    "ASSUMPTION_NOTE",
    "DEFAULT_FREE_SHARE",
    "LipschitzCheck",
    "LipschitzSelection",
    "check_lipschitz",
    "poisson_binomial_sf",
    "select_lipschitz",
]
