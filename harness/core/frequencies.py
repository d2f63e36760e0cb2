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

A weighted mix of streams draws each item's source with probabilities p, but stops when a
draw hits an exhausted source: the number of draws depends on the draws, and the fixed-D
bound does not hold at such a time. ``anytime_frequency_test`` bounds each source's p-value
by Ville's inequality over a mixture of Bernoulli exponential martingales instead, which
holds at any stopping time; ``anytime_streams_test`` takes the mean of several streams'
evidence instead of pooling their counts, which holds however the streams depend on each
other; ``anytime_detection_power`` says what they catch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

CERTIFICATION_FALSE_ALARM = 1e-6  # the chance that a conforming sampler fails a whole certification
TEST_NAME = "per-item Chernoff-KL bound on the two-sided binomial p-value, Bonferroni over the items"
ANYTIME_TEST_NAME = (
    "per-source anytime-valid bound (Ville's inequality over a mixture of Bernoulli martingales; of several "
    "streams, the mean of their evidence), Bonferroni over the sources"
)


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
    anytime: bool = False  # anytime_frequency_test: items are sources, the bound holds at any stopping time
    unseen: int = 0  # anytime_frequency_test: draws made but not yielded, allowed for in the bound

    @property
    def fails(self) -> bool:
        return self.p_value_bound <= self.threshold

    @property
    def _worst(self) -> str:
        if self.worst_item == ALL_ITEMS:
            return "all items together"
        return f"{'source' if self.anytime else 'item'} {self.worst_item}"

    def describe(self) -> str:
        if self.anytime:
            return self._describe_anytime()
        if self.worst_item is None:
            return f"{self.draws} draws, no item of non-zero probability to test"
        tested = f"{self.items_tested - 1} items and their total" if self.pooled else f"{self.items_tested} items"
        trials = f"{self.draws} steps each" if self.steps else f"{self.draws} draws"
        return (
            f"Chernoff-KL test over {tested}, {trials}: {self._worst} was drawn "
            f"{self.worst_count} times where {self.worst_expected:.1f} were expected, a p-value of at most "
            f"{self.p_value_bound:.3g} against a threshold of {self.threshold:.3g}"
        )

    def _describe_anytime(self) -> str:
        if self.worst_item is None:
            return f"{self.draws} draws, {self.unseen} unseen, no source of non-zero probability to test"
        return (
            "anytime-valid test (Ville's inequality over a mixture of Bernoulli martingales) over "
            f"{self.items_tested} sources, {self.draws} draws, {self.unseen} unseen: {self._worst} was drawn "
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
    bounds = _two_sided_bounds(counts[tested], trials, probabilities[tested])
    # The vectorised bounds may differ from two_sided_bound's in their last bits: the items
    # within NEAR of the smallest are bounded again one by one, so that the verdict is the
    # per-item function's exactly, at numpy's speed over 2^24 items.
    near = np.flatnonzero(bounds <= bounds.min(initial=1.0) * (1 + NEAR))
    for at in near:
        item = tested[at]
        bounds[at] = two_sided_bound(int(counts[item]), trials, float(probabilities[item]))
    return _furthest_out(tested, bounds, counts, trials, probabilities, alpha, steps=steps)


NEAR = 1e-6  # relative: far beyond the rounding of a vectorised bound, far below any difference judged


def _two_sided_bounds(counts: np.ndarray, draws: int, probabilities: np.ndarray) -> np.ndarray:
    """:func:`two_sided_bound` of each item, in numpy (0 < p <= 1)."""
    if draws == 0:
        return np.ones(counts.size)
    observed = counts / draws
    with np.errstate(divide="ignore", invalid="ignore"):
        divergence = np.zeros(counts.size)
        for a, b in ((observed, probabilities), (1.0 - observed, 1.0 - probabilities)):
            term = np.where(a > 0, a * np.log(a / b), 0.0)
            divergence += np.where((a > 0) & (b <= 0), np.inf, term)
    return np.minimum(1.0, 2.0 * np.exp(-draws * np.maximum(divergence, 0.0)))


def _furthest_out(
    tested: np.ndarray,
    bounds: Sequence[float] | np.ndarray,
    counts: np.ndarray,
    draws: int,
    probabilities: np.ndarray,
    alpha: float,
    **kind: Any,
) -> FrequencyVerdict:
    """The verdict of the items ``tested``, each with its bound on a p-value (``bounds``),
    Bonferroni over them: the item furthest out, or none where nothing was drawn or tested.
    ``kind``: the verdict's flags that say which test it was."""
    if tested.size == 0 or draws == 0:
        return FrequencyVerdict(draws, int(tested.size), None, 0, 0.0, 1.0, alpha / max(int(tested.size), 1), **kind)
    worst = int(tested[int(np.argmin(bounds))])
    return FrequencyVerdict(
        draws=draws,
        items_tested=int(tested.size),
        worst_item=worst,
        worst_count=int(counts[worst]),
        worst_expected=draws * float(probabilities[worst]),
        p_value_bound=float(min(bounds)),
        threshold=alpha / tested.size,
        **kind,
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


# The mixture's bets: tilts lam of the Bernoulli exponential martingale exp(lam c - t psi(lam)),
# 24 a side, |lam| geometric from 0.01 to 8, equal weights. The tilt that wins fastest against a
# source drawn with q instead of p is lam = log(q (1 - p) / (p (1 - q))), its log-odds ratio.
# Below 0.01 a tilt needs millions of draws to reach a threshold (its growth, about
# lam^2 p (1 - p) t / 2, against log(48 / alpha), 24 nats at alpha = 5e-9 over 3 sources);
# above 8 (odds 3,000 to 1, e.g. p = 1e-4 drawn at 0.23) the tilt of 8 wins the bet too.
# Neighbours a factor 1.34 apart put a tilt within 1.16 of the best, which keeps 97.5% of its
# growth rate (2x - x^2 at x = 1.16); the equal weights cost log 48 = 3.9 nats against the best
# tilt alone. 96 tilts a side give docs/statistical-invariants.md's power figures to the same 4
# places; 6 a side lose up to 0.01 of them.
_TILT_SIZES = np.geomspace(0.01, 8.0, 24)
ANYTIME_TILTS = np.concatenate([-_TILT_SIZES[::-1], _TILT_SIZES])
_BLOCK = 1 << 21  # the mixture's terms computed at once, at most: memory, not speed


def _log_mixture(counts: np.ndarray, draws: np.ndarray, probability: float) -> np.ndarray:
    """log E at source counts ``counts`` of ``draws`` draws (broadcast together): the mean over
    the tilts of exp(lam c - t psi(lam)), psi(lam) = log E[e^(lam X)] for X ~ Bernoulli(p), in
    logs (log-sum-exp: a term reaches e^1000 at a few thousand draws)."""
    psi = np.log1p(probability * np.expm1(ANYTIME_TILTS))
    terms = counts[..., None] * ANYTIME_TILTS - draws[..., None] * psi
    top = terms.max(axis=-1)
    return top + np.log(np.exp(terms - top[..., None]).sum(axis=-1)) - math.log(ANYTIME_TILTS.size)


def _anytime_log_evidence(counts: np.ndarray, draws: int, probability: float, unseen: int) -> np.ndarray:
    """log E at each of ``counts`` of the same ``draws``, the least over what ``unseen`` draws
    may hide: inf where the counts cannot happen (a source of probability 0 drawn, one of
    probability 1 missed)."""
    if probability <= 0:
        return np.where(counts > 0, np.inf, 0.0)
    if probability >= 1:
        return np.where(counts == draws, 0.0, np.inf)
    missed, hidden = np.tril_indices(unseen + 1)  # d <= unseen draws unseen, a <= d of them this source's
    rows = max(1, _BLOCK // (missed.size * ANYTIME_TILTS.size))
    least = [
        _log_mixture(counts[i : i + rows, None] + hidden, draws + missed, probability).min(axis=1)
        for i in range(0, counts.size, rows)
    ]
    return np.concatenate(least or [np.zeros(0)])


def _anytime_bounds(counts: np.ndarray, draws: int, probability: float, unseen: int) -> np.ndarray:
    """:func:`anytime_bound` at each of ``counts``, the same ``draws``."""
    return np.exp(-np.maximum(_anytime_log_evidence(counts, draws, probability, unseen), 0.0))


def anytime_bound(count: int, draws: int, probability: float, unseen: int = 0) -> float:
    """A bound on the p-value of a source drawn ``count`` times in ``draws`` draws, each one
    this source's with ``probability``, valid however the draws were stopped: 1/E (at most 1), E the
    mixture of Bernoulli martingales, whose supremum over time reaches 1/a with probability at
    most a (Ville's inequality). Up to ``unseen`` more draws were made and not seen, any of
    them this source's: the bound is the largest over every count and total they may hide."""
    return float(_anytime_bounds(np.array([count], dtype=np.int64), draws, probability, unseen)[0])


def anytime_frequency_test(
    counts: Sequence[int] | np.ndarray, probabilities: Sequence[float] | np.ndarray, alpha: float, unseen: int = 0
) -> FrequencyVerdict:
    """Test the sources of the items a weighted mix of streams yielded (counts pooled over the
    streams, D = their sum) against ``probabilities`` at false-alarm rate ``alpha``, however the
    streams stopped. Each stream stops at a time its own draws decide, so its draws laid end to
    end with the next stream's are still i.i.d. categorical(p) given the past, and each
    source's count less p_k t is a martingale: :func:`anytime_bound` holds where the fixed-D
    bound does not. A stream that stops at a draw it does not yield hides that draw: ``unseen``
    counts those. Bonferroni over the sources tested: of probability in (0, 1], and a source
    of probability 0 drawn at all, which fails for certain."""
    counts = np.asarray(counts, dtype=np.int64)
    probabilities = np.asarray(probabilities, dtype=np.float64)
    if counts.shape != probabilities.shape:
        raise ValueError(f"{counts.size} counts for {probabilities.size} probabilities")
    if unseen < 0:
        raise ValueError(f"unseen draws are at least 0, not {unseen}")
    return _anytime_test(counts[None, :], probabilities, alpha, unseen)


def anytime_streams_test(
    counts: Sequence[Sequence[int]] | np.ndarray, probabilities: Sequence[float] | np.ndarray, alpha: float
) -> FrequencyVerdict:
    """:func:`anytime_frequency_test` of several streams (``counts[j][k]``: stream j's draws
    of source k) that may depend on each other in any way: for each source, the mean over the
    streams of each stream's E (at its own stop, the one draw that ended it unseen), which is
    an e-value whatever their dependence (each has mean at most 1 at a stopping time, and so
    has their mean), so ``1 / mean`` bounds the p-value. Pooled counts need independent
    streams: streams seeded alike repeat one stream's chance deviation as many times as there
    are of them. Bonferroni over the sources tested."""
    probabilities = np.asarray(probabilities, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.int64).reshape(-1, probabilities.size)
    return _anytime_test(counts, probabilities, alpha, 1)


def _anytime_test(by_stream: np.ndarray, probabilities: np.ndarray, alpha: float, unseen: int) -> FrequencyVerdict:
    """Each source's bound from the mean over the streams (the rows of ``by_stream``) of each
    stream's least evidence over what ``unseen`` draws of its own may hide; of one stream, its
    own. The verdict counts ``unseen`` for each stream."""
    pooled, totals = by_stream.sum(axis=0), by_stream.sum(axis=1)
    draws = int(totals.sum())
    tested = np.flatnonzero((probabilities > 0) | (pooled > 0))
    bounds = []
    for k in tested if draws else ():  # nothing drawn: nothing to bound (_furthest_out says so)
        evidence = [
            _anytime_log_evidence(by_stream[j, k : k + 1], int(total), float(probabilities[k]), unseen)[0]
            for j, total in enumerate(totals)
        ]
        top = max(evidence)
        mean = (
            top if math.isinf(top) else top + math.log(math.fsum(math.exp(e - top) for e in evidence) / len(evidence))
        )
        bounds.append(math.exp(-max(mean, 0.0)))
    return _furthest_out(tested, bounds, pooled, draws, probabilities, alpha, anytime=True, unseen=unseen * len(totals))


def anytime_detection_power(
    draws: int, declared: float, actual: float, sources: int, alpha: float, unseen: int = 0
) -> float:
    """The probability that one source drawn with probability ``actual``, declared ``declared``,
    makes :func:`anytime_frequency_test` fail on its own over ``draws`` yielded draws (the other
    ``sources - 1`` conforming), at rate ``alpha``: the exact binomial probability of the counts
    whose bound reaches the threshold. What validity at any time costs is this against
    :func:`detection_power`."""
    k = np.arange(draws + 1)
    flagged = _anytime_bounds(k, draws, declared, unseen) <= alpha / sources
    if not flagged.any():
        return 0.0
    return float(np.exp(_binomial_log_pmf(k[flagged], draws, actual)).sum())


def summarize(verdicts: Sequence[FrequencyVerdict]) -> dict[str, Any] | None:
    """What the certificate says of some frequency tests: how many ran, their draws, and the
    one closest to failing (its bound on a p-value against its threshold); None for none."""
    tested = [v for v in verdicts if v.worst_item is not None]
    if not tested:
        return None
    closest = min(tested, key=lambda v: v.p_value_bound / v.threshold)
    return {
        "test": "; ".join(dict.fromkeys(ANYTIME_TEST_NAME if v.anytime else TEST_NAME for v in tested)),
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
        "test": "; ".join(dict.fromkeys(name for s in summaries for name in s["test"].split("; "))),
        "false_alarm_budget": CERTIFICATION_FALSE_ALARM,
        "tests_run": sum(s["tests_run"] for s in summaries),
        "fewest_draws": min(s["fewest_draws"] for s in summaries),
        "most_draws": max(s["most_draws"] for s in summaries),
        "closest": closest,
    }
