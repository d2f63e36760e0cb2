"""The elastic extension in real process groups: W ranks of a group take k items each and
save, and the W' ranks of another group load rank 0's state and go on
(docs/resume-and-elastic.md, "The elastic protocol"), every sampler built from its group;
the new ranks all-reduce what they hold.
W and W' are every ordered pair of distinct sizes in ``--world-sizes``; a chain goes
W -> W' -> W."""

from __future__ import annotations

from functools import partial

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sampler_conformance.subjects.index_sampler.elastic_checks import (
    check_exactly_once,
    check_global_cursor,
    check_ranks_agree,
    expect_elastic,
)
from sampler_conformance.subjects.index_sampler.resume_draws import checkpoint_at, drawn, leg_items, pass_items
from sampler_conformance.subjects.index_sampler.runs import ElasticRun
from sampler_conformance.subjects.index_sampler.scenarios.elastic import elastic_run

from .examples import round_trips


def _one_change(groups, world_size_change, plug, contract, drop_last, data) -> ElasticRun:
    old, new = world_size_change
    case, epoch = drawn(data, plug, contract, drop_last, world_size=old)
    k = checkpoint_at(data, pass_items(contract, case), ends_weighted=False)
    return elastic_run(groups, plug, contract, case, epoch=epoch, legs=((old, k),), last_world_size=new)


@pytest.mark.invariant("elastic_cursor")
@round_trips
@given(data=st.data())
def test_elastic_resume_continues_the_global_order(groups, world_size_change, sampler_plug, contract, drop_last, data):
    """The ranks of the new group go on with exactly the rest of the epoch's global order."""
    run = _one_change(groups, world_size_change, sampler_plug, contract, drop_last, data)
    expect_elastic("elastic_cursor", run, partial(check_global_cursor, "elastic_cursor"))


@pytest.mark.invariant("elastic_exactly_once")
@round_trips
@given(data=st.data())
def test_elastic_resume_yields_each_item_once(groups, world_size_change, sampler_plug, contract, drop_last, data):
    """Across the two groups, the epoch repeats nothing and loses nothing beyond padding."""
    run = _one_change(groups, world_size_change, sampler_plug, contract, drop_last, data)
    expect_elastic("elastic_exactly_once", run, check_exactly_once)


@pytest.mark.invariant("elastic_ranks_agree")
@round_trips
@given(data=st.data())
def test_elastic_resume_leaves_equal_counts(groups, world_size_change, sampler_plug, contract, drop_last, data):
    """The new group's ranks hold as many items and batches as each other, all-reduced."""
    run = _one_change(groups, world_size_change, sampler_plug, contract, drop_last, data)
    expect_elastic("elastic_ranks_agree", run, check_ranks_agree)


@pytest.mark.invariant("elastic_hops_compose")
@round_trips
@given(data=st.data())
def test_world_size_changes_compose(groups, world_size_change, sampler_plug, contract, drop_last, data):
    """W -> W' (j more items each) -> W: the last group goes on at the cursor both legs moved."""
    old, new = world_size_change
    case, epoch = drawn(data, sampler_plug, contract, drop_last, world_size=old)
    k = checkpoint_at(data, pass_items(contract, case), ends_weighted=False)
    j = checkpoint_at(
        data,
        leg_items(contract, case, new, k * old),
        label="j (items on each of W' before saving)",
        ends_weighted=False,
    )
    run = elastic_run(groups, sampler_plug, contract, case, epoch=epoch, legs=((old, k), (new, j)), last_world_size=old)
    expect_elastic("elastic_hops_compose", run, partial(check_global_cursor, "elastic_hops_compose"))
