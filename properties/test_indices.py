"""What the indices are, which ranks get them, and in what order."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from harness.checkers import (
    check_assignment,
    check_coverage,
    check_disjoint,
    check_pads_from_head,
    check_stream_blocks,
    check_unshuffled_in_order,
    check_valid_indices,
    check_whole_batches,
)
from harness.plugin import requires_parameter
from harness.runner import observe, observe_drawn
from harness.verdict import expect_holds


@pytest.mark.invariant("valid_indices")
@given(data=st.data())
def test_indices_are_valid(sampler_plug, contract, drop_last, data):
    """Every index is an int in [0, N); a sampler that never stops is reported, not waited on."""
    # reading rejects non-ints and endless samplers
    observation = observe_drawn(data, sampler_plug, contract, drop_last=drop_last)
    expect_holds(observation, check_valid_indices(observation))


@pytest.mark.invariant("covers")
@given(data=st.data())
def test_union_coverage(sampler_plug, contract, drop_last, data):
    """Without drop_last the ranks together cover range(N)."""
    observation = observe_drawn(data, sampler_plug, contract, drop_last=drop_last)
    expect_holds(observation, check_coverage(observation))


@pytest.mark.invariant("disjoint")
@given(data=st.data())
def test_ranks_disjoint_unless_padded(sampler_plug, contract, drop_last, data):
    """No index is yielded twice beyond the padding: ranks are disjoint with drop_last or when W | N."""
    observation = observe_drawn(data, sampler_plug, contract, drop_last=drop_last)
    expect_holds(observation, check_disjoint(observation, contract))


@pytest.mark.invariant("pads_from_head")
@given(data=st.data())
def test_padding_from_head(sampler_plug, contract, data):
    """Q[N:] repeats the head of the global order Q, also when the padding outgrows N."""
    observation = observe_drawn(data, sampler_plug, contract, drop_last=False)
    expect_holds(observation, check_pads_from_head(observation, contract.layout))


def _assignment(sampler_plug, contract, drop_last, data, layout):
    observation = observe_drawn(data, sampler_plug, contract, drop_last=drop_last)
    single_rank = observe(sampler_plug, observation.case.with_(world_size=1), contract)
    expect_holds(observation, check_assignment(observation, single_rank, layout))


@pytest.mark.invariant("strided")
@given(data=st.data())
def test_strided_assignment(sampler_plug, contract, drop_last, data):
    """Rank r yields Q[r::W] for the one global order Q that a single rank sees."""
    _assignment(sampler_plug, contract, drop_last, data, "strided")


@pytest.mark.invariant("contiguous")
@given(data=st.data())
def test_contiguous_assignment(sampler_plug, contract, drop_last, data):
    """Rank r yields the r-th contiguous block of the one global order Q that a single rank sees."""
    _assignment(sampler_plug, contract, drop_last, data, "contiguous")


@pytest.mark.invariant("unshuffled_in_order")
@given(data=st.data())
def test_no_shuffle_keeps_dataset_order(sampler_plug, contract, drop_last, data):
    """With shuffle=False the global order is range(N), in order."""
    requires_parameter(sampler_plug, "shuffle")
    observation = observe_drawn(data, sampler_plug, contract, drop_last=drop_last, shuffle=False)
    expect_holds(observation, check_unshuffled_in_order(observation, contract.layout))


@pytest.mark.invariant("stream_blocks_are_permutations")
@given(data=st.data())
def test_stream_blocks_are_permutations(sampler_plug, contract, data):
    """An endless sampler: the ranks' interleaved streams form one stream whose blocks of N are permutations."""
    observation = observe_drawn(data, sampler_plug, contract, drop_last=False)
    expect_holds(observation, check_stream_blocks(observation))


@pytest.mark.invariant("whole_batches")
@given(data=st.data())
def test_whole_batches(sampler_plug, contract, drop_last, data):
    """A sharded batch sampler: rank r's k-th batch is batch k*W + r of the one-rank sequence."""
    observation = observe_drawn(data, sampler_plug, contract, drop_last=drop_last)
    single_rank = observe(sampler_plug, observation.case.with_(world_size=1), contract)
    expect_holds(observation, check_whole_batches(observation, single_rank))
