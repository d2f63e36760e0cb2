"""Properties 1, 2 and 13: lengths agree, ranks are even, batch counts match."""

from __future__ import annotations

from itertools import islice

from hypothesis import given, strategies as st
from torch.utils.data import BatchSampler

from harness.checkers import check_equal_batch_counts, check_equal_length, check_len_matches_iter
from harness.plugin import promise
from harness.reading import read_limit
from harness.runner import bounded, build_samplers, observe
from harness.strategies import draw_case
from harness.verdict import expect_holds, failure_text, PropertyFailure


@given(data=st.data())
def test_len_matches_iteration(sampler_plug, contract, drop_last, data):
    """len(sampler) equals the number of indices one iteration yields, on every rank."""
    promise(contract, "len_matches_iter")
    case = draw_case(data, sampler_plug, drop_last=drop_last)
    observation = observe(sampler_plug, case)
    expect_holds(observation, check_len_matches_iter(observation))


@given(data=st.data())
def test_equal_rank_lengths(sampler_plug, contract, drop_last, data):
    """Every rank yields ceil(N/W) indices, or floor(N/W) with drop_last."""
    promise(contract, "equal_length")
    case = draw_case(data, sampler_plug, drop_last=drop_last)
    observation = observe(sampler_plug, case)
    expect_holds(observation, check_equal_length(observation, contract))


@given(data=st.data())
def test_equal_batch_counts(sampler_plug, contract, drop_last, data):
    """BatchSampler(sampler, B, drop_last) gives every rank the same number of batches."""
    promise(contract, "equal_batches")
    case = draw_case(data, sampler_plug, drop_last=drop_last)
    batch_drop_last = data.draw(st.booleans(), label="BatchSampler drop_last")
    limit = read_limit(case.dataset_size)

    def count_batches():
        batchers = [BatchSampler(s, case.batch_size, batch_drop_last) for s in build_samplers(sampler_plug, case)]
        # islice: a sampler that never stops must not spin forever here
        counts = [sum(1 for _ in islice(b, limit + 1)) for b in batchers]
        return counts, [len(b) for b in batchers]

    counts, lengths = bounded(case, count_batches)
    violations = check_equal_batch_counts(counts, lengths)
    if violations:
        raise PropertyFailure(
            failure_text(violations, case, None) + f"\n  BatchSampler(batch_size={case.batch_size}, drop_last={batch_drop_last})"
        )
