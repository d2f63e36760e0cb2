"""Properties 3 to 7: what the indices are, which ranks get them, and in what order."""

from __future__ import annotations

from hypothesis import given, strategies as st

from harness.checkers import (
    check_coverage,
    check_pads_from_head,
    check_strided,
    check_unshuffled_in_order,
    check_valid_indices,
)
from harness.plugin import promise, requires_parameter
from harness.runner import observe
from harness.strategies import draw_case
from harness.verdict import expect_holds


@given(data=st.data())
def test_indices_are_valid(sampler_plug, contract, drop_last, data):
    """Every index is an int in [0, N); a sampler that never stops is reported, not waited on."""
    promise(contract, "valid_indices")
    case = draw_case(data, sampler_plug, drop_last=drop_last)
    observation = observe(sampler_plug, case)  # reading rejects non-ints and endless samplers
    expect_holds(observation, check_valid_indices(observation))


@given(data=st.data())
def test_union_coverage(sampler_plug, contract, drop_last, data):
    """Without drop_last the ranks cover range(N); with drop_last, or W | N, they are disjoint."""
    promise(contract, "covers")
    case = draw_case(data, sampler_plug, drop_last=drop_last)
    observation = observe(sampler_plug, case)
    expect_holds(observation, check_coverage(observation))


@given(data=st.data())
def test_padding_from_head(sampler_plug, contract, data):
    """Q[N:] repeats the head of the global order Q, also when the padding outgrows N."""
    promise(contract, "pads_from_head")
    case = draw_case(data, sampler_plug, drop_last=False)
    observation = observe(sampler_plug, case)
    expect_holds(observation, check_pads_from_head(observation))


@given(data=st.data())
def test_strided_assignment(sampler_plug, contract, drop_last, data):
    """Rank r yields Q[r::W] for the one global order Q that a single rank sees."""
    promise(contract, "strided")
    case = draw_case(data, sampler_plug, drop_last=drop_last)
    observation = observe(sampler_plug, case)
    single_rank = observe(sampler_plug, case.with_(world_size=1))
    expect_holds(observation, check_strided(observation, single_rank))


@given(data=st.data())
def test_no_shuffle_keeps_dataset_order(sampler_plug, contract, drop_last, data):
    """With shuffle=False the global order is range(N), in order."""
    promise(contract, "unshuffled_in_order")
    requires_parameter(sampler_plug, "shuffle")
    case = draw_case(data, sampler_plug, drop_last=drop_last, shuffle=False)
    observation = observe(sampler_plug, case)
    expect_holds(observation, check_unshuffled_in_order(observation))
