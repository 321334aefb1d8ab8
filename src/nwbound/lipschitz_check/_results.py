"""The result objects of the held-out check: :class:`LipschitzCheck` and :class:`LipschitzSelection`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ASSUMPTION_NOTE = (
    "L is an assumption consistent with held-out data, not a certified fact; "
    "a small held-out set has little power to reject it."
)



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
