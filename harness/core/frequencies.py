"""Whether observed counts match declared probabilities: the hypothesis test behind every
statistical invariant, with a false-alarm rate that holds for a whole certification.

A sampler that draws with replacement (weighted, Poisson) yields item ``i`` a number of
times ``X_i`` that is Binomial(D, p_i) under its contract, for D draws. The test bounds each
item's two tails with the Chernoff bound in relative-entropy form, which holds for every D
and p (no normal or chi-square approximation, which fails exactly in the far tails a
budget of 1e-6 reaches):

    P(X_i >= k) <= exp(-D * KL(k/D || p_i))   for k >= D p_i, and the same for X_i <= k <= D p_i,

so ``2 exp(-D KL)`` bounds item i's two-sided p-value. The test fails when an item's bound
falls to ``alpha / n`` (Bonferroni over the n items of non-zero probability), so a
conforming sampler fails one test with probability at most ``alpha``; a certification
divides its budget (``CERTIFICATION_FALSE_ALARM``) over the tests it may run
(``FalseAlarmBudget``), so it fails by chance with probability at most the budget.
Items of probability 0 are not tested here: one draw of one is a certain violation, which
an invariant of its own charges.

``detection_power`` and ``draws_to_detect`` say what the test catches: the probability that
one item drawn with probability q instead of p fails it, computed exactly (the binomial
tail), and the draws that make that probability high.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

CERTIFICATION_FALSE_ALARM = 1e-6  # the chance that a conforming sampler fails a whole certification
TEST_NAME = "per-item Chernoff-KL bound on the two-sided binomial p-value, Bonferroni over the items"


@dataclass(frozen=True)
class FalseAlarmBudget:
    """The certification's false-alarm rate ``total``, shared by at most ``tests`` frequency tests."""

    tests: int
    total: float = CERTIFICATION_FALSE_ALARM

    def __post_init__(self) -> None:
        if self.tests < 1 or not 0 < self.total < 1:
            raise ValueError(f"a budget needs tests >= 1 and 0 < total < 1, not {self.tests} and {self.total}")

    @property
    def per_test(self) -> float:
        return self.total / self.tests


@dataclass(frozen=True)
class FrequencyVerdict:
    """What the certificate records of one test: the draws, the item furthest from its
    probability, its bound on the p-value, and the threshold it was held to."""

    draws: int
    items_tested: int
    worst_item: int | None
    worst_count: int
    worst_expected: float
    p_value_bound: float
    threshold: float  # alpha / items_tested: the test fails when p_value_bound <= threshold
    steps: bool = False  # ``draws`` are steps at which every item is drawn or not (rate_test, inclusion_test)
    pooled: bool = False  # the last of the items tested is all items together (rate_test)

    @property
    def fails(self) -> bool:
        return self.p_value_bound <= self.threshold

    @property
    def _worst(self) -> str:
        if self.worst_item == ALL_ITEMS:
            return "all items together"
        return f"item {self.worst_item}"

    def describe(self) -> str:
        if self.worst_item is None:
            return f"{self.draws} draws, no item of non-zero probability to test"
        tested = f"{self.items_tested - 1} items and their total" if self.pooled else f"{self.items_tested} items"
        trials = f"{self.draws} steps each" if self.steps else f"{self.draws} draws"
        return (
            f"Chernoff-KL test over {tested}, {trials}: {self._worst} was drawn "
            f"{self.worst_count} times where {self.worst_expected:.1f} were expected, a p-value of at most "
            f"{self.p_value_bound:.3g} against a threshold of {self.threshold:.3g}"
        )


def kl_bernoulli(observed: float, expected: float) -> float:
    """KL(observed || expected) between Bernoulli distributions, in nats (0 log 0 = 0)."""
    total = 0.0
    for a, b in ((observed, expected), (1.0 - observed, 1.0 - expected)):
        if a > 0:
            if b <= 0:
                return math.inf
            total += a * math.log(a / b)
    return max(total, 0.0)


def two_sided_bound(count: int, draws: int, probability: float) -> float:
    """A bound on P(|X - D p| >= |count - D p|) for X ~ Binomial(D, p): 2 exp(-D KL), at most 1."""
    if draws == 0:
        return 1.0
    return min(1.0, 2.0 * math.exp(-draws * kl_bernoulli(count / draws, probability)))


def frequency_test(counts: Sequence[int] | np.ndarray, probabilities: Sequence[float] | np.ndarray, alpha: float):
    """Test counts of D draws (D = their sum) against ``probabilities`` (summing to 1) at
    false-alarm rate ``alpha``. Returns a :class:`FrequencyVerdict`."""
    counts = np.asarray(counts, dtype=np.int64)
    probabilities = np.asarray(probabilities, dtype=np.float64)
    if counts.shape != probabilities.shape:
        raise ValueError(f"{counts.size} counts for {probabilities.size} probabilities")
    return _each_item(counts, int(counts.sum()), probabilities, alpha, steps=False)


def _each_item(
    counts: np.ndarray, trials: int, probabilities: np.ndarray, alpha: float, steps: bool
) -> FrequencyVerdict:
    """Item i's count against Binomial(trials, probabilities[i]), by the per-item bound, for
    every item of non-zero probability, Bonferroni over them: the item furthest out."""
    tested = np.flatnonzero(probabilities > 0)
    if tested.size == 0 or trials == 0:
        return FrequencyVerdict(trials, int(tested.size), None, 0, 0.0, 1.0, alpha / max(int(tested.size), 1), steps)
    bounds = [two_sided_bound(int(counts[i]), trials, float(probabilities[i])) for i in tested]
    worst = int(tested[int(np.argmin(bounds))])
    return FrequencyVerdict(
        draws=trials,
        items_tested=int(tested.size),
        worst_item=worst,
        worst_count=int(counts[worst]),
        worst_expected=trials * float(probabilities[worst]),
        p_value_bound=min(bounds),
        threshold=alpha / tested.size,
        steps=steps,
    )


ALL_ITEMS = -1  # FrequencyVerdict.worst_item of rate_test's pooled count: every item together


def rate_test(counts: Sequence[int] | np.ndarray, steps: int, rate: float, alpha: float) -> FrequencyVerdict:
    """Test counts of items each drawn or not at each of ``steps`` steps, with probability
    ``rate`` each time (Poisson subsampling: item i's count is Binomial(steps, rate)), at
    false-alarm rate ``alpha``: each item by the same per-item bound, and all items' counts
    together as one more test (Binomial(n x steps, rate): a rate off for every item at once is
    caught far sooner so), Bonferroni over the n + 1 tests."""
    counts = np.asarray(counts, dtype=np.int64)
    if steps == 0 or counts.size == 0 or not 0 < rate <= 1:
        return FrequencyVerdict(steps, 0, None, 0, 0.0, 1.0, alpha, steps=True)
    bounds = [two_sided_bound(int(count), steps, rate) for count in counts]
    pooled = two_sided_bound(int(counts.sum()), steps * counts.size, rate)
    worst = int(np.argmin(bounds))
    tested = counts.size + 1
    if pooled < bounds[worst]:
        return FrequencyVerdict(
            steps, tested, ALL_ITEMS, int(counts.sum()), steps * counts.size * rate, pooled, alpha / tested, True, True
        )
    return FrequencyVerdict(
        draws=steps,
        items_tested=tested,
        worst_item=worst,
        worst_count=int(counts[worst]),
        worst_expected=steps * rate,
        p_value_bound=bounds[worst],
        threshold=alpha / tested,
        steps=True,
        pooled=True,
    )


def inclusion_test(
    counts: Sequence[int] | np.ndarray, steps: int, probabilities: Sequence[float] | np.ndarray, alpha: float
) -> FrequencyVerdict:
    """Test counts of items each included or not at each of ``steps`` steps, item i with
    probability ``probabilities[i]`` each time (a sample without replacement drawn afresh at
    each step: item i's count is Binomial(steps, p_i), whatever the items' dependence within
    a step), at false-alarm rate ``alpha``: the per-item bound, Bonferroni over the items of
    non-zero probability. An item of probability 1 left out of one step fails it for certain."""
    probabilities = np.clip(np.asarray(probabilities, dtype=np.float64), 0.0, 1.0)
    return _each_item(np.asarray(counts, dtype=np.int64), steps, probabilities, alpha, steps=True)


def _binomial_log_pmf(k: np.ndarray, draws: int, probability: float) -> np.ndarray:
    log_choose = np.array([math.lgamma(draws + 1) - math.lgamma(j + 1) - math.lgamma(draws - j + 1) for j in k])
    return log_choose + k * math.log(probability) + (draws - k) * math.log1p(-probability)


def detection_power(draws: int, declared: float, actual: float, items: int, alpha: float) -> float:
    """The probability that one item drawn with probability ``actual``, declared ``declared``,
    makes the test fail on its own (the other ``items - 1`` items conforming), at rate ``alpha``:
    the exact binomial probability of the counts whose bound reaches the threshold."""
    threshold = alpha / items
    k = np.arange(draws + 1)
    flagged = np.array([two_sided_bound(int(j), draws, declared) <= threshold for j in k])
    if not flagged.any():
        return 0.0
    return float(np.exp(_binomial_log_pmf(k[flagged], draws, actual)).sum())


def draws_to_detect(declared: float, actual: float, items: int, alpha: float, power: float = 0.999) -> int:
    """The fewest draws (to within 1%) at which :func:`detection_power` reaches ``power``."""
    low, high = 1, 64
    while detection_power(high, declared, actual, items, alpha) < power:
        low, high = high, high * 2
        if high > 1 << 24:
            raise ValueError(f"more than {1 << 24} draws needed to tell {actual} from {declared}")
    while high - low > max(1, low // 100):
        middle = (low + high) // 2
        if detection_power(middle, declared, actual, items, alpha) >= power:
            high = middle
        else:
            low = middle
    return high


def summarize(verdicts: Sequence[FrequencyVerdict]) -> dict[str, Any] | None:
    """What the certificate says of some frequency tests: how many ran, their draws, and the
    one closest to failing (its bound on a p-value against its threshold); None for none."""
    tested = [v for v in verdicts if v.worst_item is not None]
    if not tested:
        return None
    closest = min(tested, key=lambda v: v.p_value_bound / v.threshold)
    return {
        "test": TEST_NAME,
        "false_alarm_budget": CERTIFICATION_FALSE_ALARM,
        "tests_run": len(tested),
        "fewest_draws": min(v.draws for v in tested),
        "most_draws": max(v.draws for v in tested),
        "closest": {
            "p_value_bound": closest.p_value_bound,
            "threshold": closest.threshold,
            "describe": closest.describe(),
        },
    }


def merge_summaries(summaries: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """Several tests' summaries (``summarize``) as one, for the invariant they judge."""
    if not summaries:
        return None
    closest = min((s["closest"] for s in summaries), key=lambda c: c["p_value_bound"] / c["threshold"])
    return {
        "test": TEST_NAME,
        "false_alarm_budget": CERTIFICATION_FALSE_ALARM,
        "tests_run": sum(s["tests_run"] for s in summaries),
        "fewest_draws": min(s["fewest_draws"] for s in summaries),
        "most_draws": max(s["most_draws"] for s in summaries),
        "closest": closest,
    }
