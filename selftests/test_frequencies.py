"""The frequency test behind the statistical invariants (harness/core/frequencies.py): its
false-alarm rate is at most the one it is given, computed exactly on small cases, and it
catches a distortion at the draws it asks for."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sampler_conformance.core import measurements
from sampler_conformance.core.frequencies import (
    ALL_ITEMS,
    ANYTIME_TEST_NAME,
    TEST_NAME,
    FalseAlarmBudget,
    anytime_bound,
    anytime_detection_power,
    anytime_frequency_test,
    anytime_streams_test,
    detection_power,
    draws_to_detect,
    frequency_test,
    inclusion_test,
    kl_bernoulli,
    rate_test,
    summarize,
    two_sided_bound,
)
from sampler_conformance.subjects.weighted_sampler.case import WeightedCase


def _binomial_pmf(draws: int, probability: float) -> np.ndarray:
    k = np.arange(draws + 1)
    return np.array([math.comb(draws, int(j)) * probability**j * (1 - probability) ** (draws - j) for j in k])


@settings(max_examples=300, deadline=None)
@given(
    draws=st.integers(1, 150),
    probability=st.floats(0.001, 0.999),
    alpha=st.floats(1e-9, 0.5),
)
def test_one_item_fails_by_chance_with_probability_at_most_alpha(draws, probability, alpha):
    """Exactly, over every count: P(bound(X) <= alpha) <= alpha for X ~ Binomial(D, p)."""
    pmf = _binomial_pmf(draws, probability)
    flagged = np.array([two_sided_bound(k, draws, probability) <= alpha for k in range(draws + 1)])
    assert pmf[flagged].sum() <= alpha * (1 + 1e-9)


def test_a_conforming_sampler_fails_less_often_than_its_rate():
    """2,000 multinomial draws of 20 unequal weights, 4,000 times, at a rate of 1%: the
    Bonferroni-corrected bound is conservative, so fewer than 1% fail."""
    rng = np.random.default_rng(0)
    weights = np.arange(1, 21, dtype=float)
    probabilities = weights / weights.sum()
    runs, alpha = 4000, 0.01
    failures = sum(
        frequency_test(rng.multinomial(2000, probabilities), probabilities, alpha).fails for _ in range(runs)
    )
    assert failures < alpha * runs, failures


def test_one_weight_doubled_among_100_is_caught_at_the_draws_the_test_asks_for():
    alpha = FalseAlarmBudget(tests=200).per_test
    declared = np.full(100, 0.01)
    actual = np.full(100, 1.0)
    actual[37] = 2.0
    actual /= actual.sum()
    draws = draws_to_detect(0.01, actual[37], 100, alpha)
    assert detection_power(draws, 0.01, actual[37], 100, alpha) >= 0.999
    rng = np.random.default_rng(1)
    verdicts = [frequency_test(rng.multinomial(draws, actual), declared, alpha) for _ in range(50)]
    assert all(v.fails and v.worst_item == 37 for v in verdicts), [v.describe() for v in verdicts if not v.fails]


def test_items_of_probability_zero_are_left_to_their_own_invariant():
    verdict = frequency_test([5, 5, 0], [0.5, 0.5, 0.0], 1e-6)
    assert verdict.items_tested == 2 and not verdict.fails
    assert frequency_test([0, 0], [0.5, 0.5], 1e-6).worst_item is None  # no draws: nothing to judge


def test_the_verdict_says_what_was_tested():
    verdict = frequency_test([90, 10], [0.5, 0.5], 1e-6)
    assert verdict.fails and verdict.worst_item in (0, 1)
    assert "100 draws" in verdict.describe() and "threshold of 5e-07" in verdict.describe()


def test_kl_and_its_edges():
    assert kl_bernoulli(0.5, 0.5) == 0.0
    assert kl_bernoulli(1.0, 0.5) == pytest.approx(math.log(2))
    assert kl_bernoulli(0.2, 0.0) == math.inf
    assert two_sided_bound(0, 0, 0.3) == 1.0


def test_bad_arguments_are_refused_saying_what_was_wrong():
    with pytest.raises(ValueError, match="2 counts for 3 probabilities"):
        frequency_test([1, 2], [0.2, 0.3, 0.5], 0.01)
    with pytest.raises(ValueError, match="tests >= 1"):
        FalseAlarmBudget(tests=0)


def test_a_conforming_poisson_sampler_fails_the_rate_test_less_often_than_its_rate():
    """30 items drawn each at 300 steps with probability 0.1, 4,000 times, at a rate of 1%: each
    item and their total are Binomial counts, and the Bonferroni-corrected bound over the 31
    tests is conservative, so fewer than 1% fail."""
    rng = np.random.default_rng(2)
    runs, alpha = 4000, 0.01
    failures = sum(rate_test(rng.binomial(300, 0.1, size=30), 300, 0.1, alpha).fails for _ in range(runs))
    assert failures < alpha * runs, failures


def test_a_rate_halved_for_every_item_is_caught_by_their_total():
    """Each item drawn at half the declared rate, too few steps to see it in any one item: the
    total sees it (ALL_ITEMS), at the certification's per-test budget."""
    alpha = FalseAlarmBudget(tests=100).per_test
    rng = np.random.default_rng(3)
    verdicts = [rate_test(rng.binomial(200, 0.025, size=100), 200, 0.05, alpha) for _ in range(20)]
    assert all(v.fails and v.worst_item == ALL_ITEMS for v in verdicts), [v.describe() for v in verdicts]
    assert "all items together" in verdicts[0].describe() and "200 steps each" in verdicts[0].describe()


def _inclusion_by_every_sequence(weights: list[float], draws: int) -> list[float]:
    """Successive sampling's inclusion probabilities, by every ordered sequence of draws."""
    included = [0.0] * len(weights)
    positive = [i for i, w in enumerate(weights) if w > 0]
    for sequence in itertools.permutations(positive, draws):
        chance, left = 1.0, sum(weights)
        for item in sequence:
            chance *= weights[item] / left
            left -= weights[item]
        for item in sequence:
            included[item] += chance
    return included


@pytest.mark.parametrize(
    ("weights", "draws"),
    [([3.0, 1.0, 1.0, 0.0], 2), ([1.0, 10.0, 100.0, 0.001, 5.0, 5.0], 3), ([2.0] * 5, 5), ([0.0, 7.0], 1)],
)
def test_inclusion_probabilities_are_those_of_every_sequence_of_draws(weights, draws):
    """Computed from the sets drawn first, they are what summing every ordered sequence gives;
    they add up to the draws."""
    case = WeightedCase(dataset_size=len(weights), world_size=1, weights=tuple(weights), num_samples=draws)
    computed = case.inclusion_probabilities()
    assert np.allclose(computed, _inclusion_by_every_sequence(weights, draws)), computed
    assert math.isclose(float(computed.sum()), draws)


def test_a_conforming_sample_without_replacement_fails_the_inclusion_test_less_often_than_its_rate():
    """2,000 runs of 300 epochs, each epoch 3 draws without replacement of 8 unequal weights
    (Efraimidis-Spirakis: the 3 largest keys u^(1/w), which is successive sampling), at a
    rate of 1%: fewer than 1% fail."""
    weights = np.arange(1.0, 9.0)
    case = WeightedCase(dataset_size=8, world_size=1, weights=tuple(weights), num_samples=3)
    probabilities, runs, epochs, alpha = case.inclusion_probabilities(), 2000, 300, 0.01
    keys = np.random.default_rng(4).random((runs, epochs, 8)) ** (1 / weights)
    included = (np.argsort(np.argsort(-keys, axis=2), axis=2) < 3).sum(axis=1)  # per run, item i's epochs
    failures = sum(inclusion_test(counts, epochs, probabilities, alpha).fails for counts in included)
    assert failures < alpha * runs, failures


def test_an_item_sure_to_be_included_and_left_out_once_fails_the_inclusion_test():
    verdict = inclusion_test([100, 99], 100, [1.0, 1.0], alpha=1e-9)
    assert verdict.fails and verdict.worst_item == 1 and "2 items, 100 steps each" in verdict.describe(), verdict


def test_measurements_merge_into_their_mean_and_largest():
    one = measurements.summarize({"padding": [0.0, 0.5]})
    two = measurements.summarize({"padding": [1.0], "unused": []})
    assert two == {"padding": {"values": 1, "mean": 1.0, "max": 1.0}}
    assert one is not None and two is not None
    assert measurements.merge([one, two]) == {"padding": {"values": 3, "mean": 0.5, "max": 1.0}}
    assert measurements.summarize({}) is None and measurements.merge([]) is None


@settings(max_examples=100, deadline=None)
@given(
    draws=st.integers(1, 150),
    probability=st.floats(0.001, 0.999),
    alpha=st.floats(1e-9, 0.5),
    unseen=st.integers(0, 4),
)
def test_one_source_fails_the_anytime_test_by_chance_with_probability_at_most_alpha(draws, probability, alpha, unseen):
    """Exactly, over every count C ~ Binomial(D + unseen, p) of all draws: the chance that the
    yielded count C - a (any a <= unseen of the draws not yielded) has a bound <= alpha, with
    D yielded draws, is at most alpha; at a fixed time, and whichever draws went unseen."""
    total = draws + unseen
    pmf = _binomial_pmf(total, probability)
    yielded = [
        range(max(0, count - draws), min(count, unseen) + 1) for count in range(total + 1)
    ]  # a: this source's unseen draws, at most `unseen`, leaving at most `draws` seen
    flagged = np.array(
        [
            any(anytime_bound(c - a, draws, probability, unseen) <= alpha for a in hidden)
            for c, hidden in enumerate(yielded)
        ]
    )
    assert pmf[flagged].sum() <= alpha * (1 + 1e-9)


def _mixes_of_streams(rng: np.random.Generator, weights: np.ndarray, mixes: int, streams: int) -> np.ndarray:
    """Source counts of ``mixes`` conforming mixes of ``streams`` streams each: a stream draws
    sources with ``weights`` from shares of random sizes (1 to 99 items a source) and stops at
    the first draw of a source whose share it has used up, which it does not yield."""
    sources = weights.size
    shares = rng.integers(1, 100, size=(mixes * streams, sources))
    drawn = rng.choice(sources, size=(mixes * streams, int(shares.sum(axis=1).max()) + 1), p=weights)
    running = (drawn[..., None] == np.arange(sources)).cumsum(axis=1, dtype=np.int32)  # counts so far, this draw in
    rows = np.arange(drawn.shape[0])[:, None]
    over = np.take_along_axis(running, drawn[..., None], axis=2)[..., 0] > shares[rows, drawn]
    stop = over.argmax(axis=1)  # a share of S items + 1 draws: some source's share runs out by then
    yielded = running[np.arange(drawn.shape[0]), stop] - (
        drawn[np.arange(drawn.shape[0]), stop, None] == np.arange(sources)
    )
    return yielded.reshape(mixes, streams, sources).sum(axis=1)


def test_a_conforming_mix_stopped_by_its_draws_fails_the_anytime_test_less_often_than_its_rate():
    """2,000 mixes of 3 sources weighted (0.6, 0.3, 0.1), 4 streams each, every stream stopped
    by its draws (the first of a used-up share, not yielded; 31 to 548 items a mix), at a rate
    of 1%, the 4 draws that stopped them unseen: fewer than 1% fail (none does)."""
    rng = np.random.default_rng(0)
    weights, runs, alpha = np.array([0.6, 0.3, 0.1]), 2000, 0.01
    counts = _mixes_of_streams(rng, weights, runs, streams=4)
    assert counts.sum(axis=1).min() < 100 < 300 < counts.sum(axis=1).max()  # stopped early and late
    failures = sum(anytime_frequency_test(c, weights, alpha, unseen=4).fails for c in counts)
    assert failures < alpha * runs, failures


def test_a_stream_stopped_as_soon_as_it_looks_off_fails_the_fixed_test_but_not_the_anytime_one():
    """1,000 streams of a source of probability 0.3, each stopped at the first of 150 draws whose
    count the test rejects at 5% (sampling to a foregone conclusion): the fixed-D bound fails
    more than 7% of them (8.2%), the anytime bound, which holds at any stopping time, under 5%
    (1%)."""
    rng = np.random.default_rng(5)
    draws, probability, alpha, runs = 150, 0.3, 0.05, 1000
    paths = np.concatenate(
        [np.zeros((runs, 1), dtype=int), (rng.random((runs, draws)) < probability).cumsum(axis=1)], axis=1
    )
    for bound, more_than in ((two_sided_bound, True), (anytime_bound, False)):
        rejects = np.zeros((draws + 1, draws + 1), dtype=bool)  # [t, count]
        for t in range(1, draws + 1):
            rejects[t, : t + 1] = [bound(c, t, probability) <= alpha for c in range(t + 1)]
        stopped = rejects[np.arange(draws + 1), paths].any(axis=1).mean()
        assert (stopped > 1.4 * alpha) if more_than else (stopped < alpha), (bound.__name__, stopped)


def test_a_clear_distortion_fails_the_anytime_test():
    """Weights declared (0.8, 0.2), drawn evenly: 400 draws fail at 1e-8, and would 99.9% of
    the time; one draw of a source of weight 0 fails for certain, and a source of weight 1
    missing one draw."""
    counts = np.random.default_rng(6).multinomial(400, [0.5, 0.5])
    verdict = anytime_frequency_test(counts, [0.8, 0.2], 1e-8)
    assert verdict.fails, verdict.describe()
    assert anytime_detection_power(400, 0.8, 0.5, 2, 1e-8) > 0.999
    assert anytime_detection_power(400, 0.2, 0.5, 2, 1e-8, unseen=8) > 0.999
    zero = anytime_frequency_test([50, 49, 1], [0.5, 0.5, 0.0], 1e-6, unseen=4)
    assert zero.fails and zero.worst_item == 2 and zero.p_value_bound == 0.0, zero.describe()
    assert not anytime_frequency_test([50, 50, 0], [0.5, 0.5, 0.0], 1e-6).fails
    assert anytime_frequency_test([30, 1], [1.0, 0.0], 1e-6).fails
    assert not anytime_frequency_test([30, 0], [1.0, 0.0], 1e-6).fails


def test_unseen_draws_only_loosen_the_anytime_test():
    """For 300 draws of a source of probability 0.3, at 1e-3: every count's bound grows with the
    draws unseen, the counts that fail with 8 unseen fail with none, and the last count that
    passes with none, just short of failing, passes with 8."""
    draws, probability, alpha = 300, 0.3, 1e-3
    bounds = np.array([[anytime_bound(c, draws, probability, u) for c in range(draws + 1)] for u in (0, 1, 2, 4, 8)])
    assert (np.diff(bounds, axis=0) >= 0).all()
    fails = bounds <= alpha
    assert (fails[1:] <= fails[:-1]).all() and fails[-1].any()
    borderline = int(np.flatnonzero(~fails[0] & (np.arange(draws + 1) > draws * probability)).max())
    assert bounds[0, borderline] < 2 * alpha and not fails[:, borderline].any(), bounds[:, borderline]
    counts, weights = [borderline, draws - borderline], [probability, 1 - probability]
    verdicts = [anytime_frequency_test(counts, weights, 2 * alpha, unseen=u) for u in (0, 1, 2, 4, 8)]
    assert not any(v.fails for v in verdicts) and verdicts[0].p_value_bound == pytest.approx(bounds[0, borderline])
    assert all(a.p_value_bound <= b.p_value_bound for a, b in itertools.pairwise(verdicts))


def test_the_anytime_verdict_says_what_was_tested():
    verdict = anytime_frequency_test([90, 10, 0], [0.5, 0.5, 0.0], 1e-6, unseen=3)
    text = verdict.describe()
    assert verdict.fails and verdict.worst_item in (0, 1) and verdict.items_tested == 2
    assert text.startswith("anytime-valid test (Ville's inequality") and "2 sources, 100 draws, 3 unseen" in text
    assert f"source {verdict.worst_item} was drawn" in text and "threshold of 5e-07" in text
    assert anytime_frequency_test([0, 0], [0.5, 0.5], 1e-6).worst_item is None
    anytime_summary, fixed_summary = summarize([verdict]), summarize([frequency_test([5, 5], [0.5, 0.5], 1e-6)])
    assert anytime_summary is not None and anytime_summary["test"] == ANYTIME_TEST_NAME
    assert fixed_summary is not None and fixed_summary["test"] == TEST_NAME
    with pytest.raises(ValueError, match="unseen draws are at least 0"):
        anytime_frequency_test([1, 2], [0.5, 0.5], 0.01, unseen=-1)


def _stopped_stream(rng: np.random.Generator, probabilities: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """One stream's yielded counts by source: i.i.d. draws until one hits a share read whole (not yielded)."""
    counts = np.zeros(probabilities.size, dtype=np.int64)
    for source in rng.choice(probabilities.size, size=10 * int(shares.sum()) + 10, p=probabilities):
        if counts[source] == shares[source]:
            break
        counts[source] += 1
    return counts


def test_streams_seeded_alike_fail_the_mean_of_evidence_no_more_often_than_its_rate():
    """2,000 mixes of 4 streams that all draw one sequence (the datasets and litdata mixes:
    every rank seeded alike), each stopped at its own share, at a rate of 1%: the mean of the
    streams' evidence fails fewer than 1% of them, where pooling their counts, which takes
    them to be independent, fails far more often."""
    rng = np.random.default_rng(0)
    probabilities = np.array([0.6, 0.3, 0.1])
    runs, alpha = 2000, 0.01
    averaged = pooled = 0
    for _ in range(runs):
        seed = int(rng.integers(2**32))
        by_stream = np.array(
            [_stopped_stream(np.random.default_rng(seed), probabilities, rng.integers(1, 60, size=3)) for _ in range(4)]
        )
        averaged += anytime_streams_test(by_stream, probabilities, alpha).fails
        pooled += anytime_frequency_test(by_stream.sum(axis=0), probabilities, alpha, unseen=4).fails
    assert averaged < alpha * runs < pooled, (averaged, pooled)


def test_the_mean_of_evidence_catches_weights_that_never_reach_the_draw():
    """4 independent streams of 400 draws, weights 0.8 and 0.2 drawn alike: fails at 1e-8; a
    source of weight 0 drawn once fails for certain; conforming streams pass."""
    rng = np.random.default_rng(1)
    even = np.array([rng.multinomial(400, [0.5, 0.5]) for _ in range(4)])
    assert anytime_streams_test(even, [0.8, 0.2], 1e-8).fails
    assert anytime_streams_test([[10, 1], [12, 0]], [1.0, 0.0], 0.5).p_value_bound == 0.0
    conforming = np.array([rng.multinomial(400, [0.8, 0.2]) for _ in range(4)])
    verdict = anytime_streams_test(conforming, [0.8, 0.2], 1e-8)
    assert not verdict.fails and verdict.draws == 1600 and verdict.unseen == 4, verdict
