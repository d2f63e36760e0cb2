"""The elastic extension (``--contract=BASE+elastic``).

Each test draws a case on W ranks, an epoch, where the checkpoint is taken (k = 0 and k =
the whole pass weighted) and the world size W' != W the run resumes on, and runs the
protocol of docs/resume-and-elastic.md, "The elastic protocol"
(``harness.subjects.index_sampler.scenarios.elastic``): W ranks take k items each and save,
and W' ranks load rank 0's state and go on. ``resized_ranks`` runs it on simulated ranks of
each world size drawn, and in real groups, every sampler built from its group, for every
ordered pair of distinct sizes in ``--world-sizes`` (W and W' fixed; a chain goes
W -> W' -> W); there the new ranks all-reduce what they hold.
"""

from __future__ import annotations

from functools import partial

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sampler_conformance.pytest_plugin.ranks import ResizedRanks
from sampler_conformance.subjects.index_sampler.elastic_checks import (
    check_exactly_once,
    check_global_cursor,
    check_ranks_agree,
    expect_elastic,
)
from sampler_conformance.subjects.index_sampler.resume_draws import (
    checkpoint_at,
    drawn,
    leg_items,
    other_world_size,
    pass_items,
)
from sampler_conformance.subjects.index_sampler.resume_labels import (
    LAST_WORLD_LABEL,
    MIDDLE_TAKEN_LABEL,
    NEW_WORLD_LABEL,
)
from sampler_conformance.subjects.index_sampler.runs import ElasticRun
from sampler_conformance.subjects.index_sampler.scenarios.elastic import elastic_run


def _one_change(data, resized_ranks: ResizedRanks, plug, contract, drop_last) -> ElasticRun:
    """W ranks take k items each and save; W' ranks load rank 0's state and read the rest."""
    old, new = resized_ranks.sizes or (None, None)
    case, epoch = drawn(data, plug, contract, drop_last, world_size=old)
    k = checkpoint_at(data, pass_items(contract, case), ends_weighted=False)
    new_world = new or other_world_size(data, case.world_size, NEW_WORLD_LABEL)
    return elastic_run(
        resized_ranks.at, plug, contract, case, epoch=epoch, legs=((case.world_size, k),), last_world_size=new_world
    )


@pytest.mark.invariant("elastic_cursor")
@given(data=st.data())
def test_elastic_resume_continues_the_global_order(resized_ranks, sampler_plug, contract, drop_last, data):
    """Resumed on W' ranks after k items on each of W, the new ranks go on with exactly the
    rest of the epoch's global order, then its padding."""
    run = _one_change(data, resized_ranks, sampler_plug, contract, drop_last)
    expect_elastic("elastic_cursor", run, partial(check_global_cursor, "elastic_cursor"))


@pytest.mark.invariant("elastic_exactly_once")
@given(data=st.data())
def test_elastic_resume_yields_each_item_once(resized_ranks, sampler_plug, contract, drop_last, data):
    """Across the change of world size, the epoch repeats nothing and loses nothing beyond
    the padding (or dropped tail) of the new world size."""
    run = _one_change(data, resized_ranks, sampler_plug, contract, drop_last)
    expect_elastic("elastic_exactly_once", run, check_exactly_once)


@pytest.mark.invariant("elastic_ranks_agree")
@given(data=st.data())
def test_elastic_resume_leaves_equal_counts(resized_ranks, sampler_plug, contract, drop_last, data):
    """After the change of world size, every new rank holds as many items as the others."""
    run = _one_change(data, resized_ranks, sampler_plug, contract, drop_last)
    expect_elastic("elastic_ranks_agree", run, check_ranks_agree)


@pytest.mark.invariant("elastic_hops_compose")
@given(data=st.data())
def test_world_size_changes_compose(resized_ranks, sampler_plug, contract, drop_last, data):
    """W -> W' (j more items each) -> W'' (in real groups, W'' = W): the last ranks go on at
    the cursor both legs moved, as one change from W at that cursor would."""
    old, new = resized_ranks.sizes or (None, None)
    case, epoch = drawn(data, sampler_plug, contract, drop_last, world_size=old)
    k = checkpoint_at(data, pass_items(contract, case), ends_weighted=False)
    middle = new or other_world_size(data, case.world_size, NEW_WORLD_LABEL)
    j = checkpoint_at(
        data,
        leg_items(contract, case, middle, k * case.world_size),
        label=MIDDLE_TAKEN_LABEL,
        ends_weighted=False,
    )
    last = old or other_world_size(data, middle, LAST_WORLD_LABEL)
    run = elastic_run(
        resized_ranks.at,
        sampler_plug,
        contract,
        case,
        epoch=epoch,
        legs=((case.world_size, k), (middle, j)),
        last_world_size=last,
    )
    expect_elastic("elastic_hops_compose", run, partial(check_global_cursor, "elastic_hops_compose"))
