"""The weighted sampler's invariants in real process groups: every rank builds its own sampler
in its own process, whose global generators start alike, as in a job
(``harness.subjects.weighted_sampler.scenarios``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sampler_conformance.core.evidence import expect_holds
from sampler_conformance.pytest_plugin.crashes import judge_only_if
from sampler_conformance.subjects.weighted_sampler.checks import ONE_EPOCH, check_ranks_apart
from sampler_conformance.subjects.weighted_sampler.draws import draw_comparable_case, draw_weighted_case, epochs
from sampler_conformance.subjects.weighted_sampler.scenarios import read_epochs

from .examples import round_trips


@pytest.mark.parametrize("flag", [pytest.param(f, marks=pytest.mark.invariant(f), id=f) for f in ONE_EPOCH])
@round_trips
@given(data=st.data())
def test_weighted_epoch_in_groups(group, world_size, weighted_plug, contract, flag, data):
    """One epoch, every rank in its own process."""
    case = draw_weighted_case(data, weighted_plug, world_size=world_size)
    (epoch,) = read_epochs(group, weighted_plug, contract, case, [data.draw(epochs(), label="epoch")])
    expect_holds(epoch.observation, ONE_EPOCH[flag](epoch))


@pytest.mark.invariant("ranks_draw_apart")
@round_trips
@given(data=st.data())
def test_ranks_draw_apart_in_groups(group, world_size, weighted_plug, contract, data):
    """Every rank in its own process, the global generators alike in all: the streams still differ.
    A sampler that draws on the global generator draws the same stream on every rank of a job."""
    if world_size < 2:
        pytest.skip("one rank draws apart from no other")
    case = draw_comparable_case(data, weighted_plug, world_size=world_size)
    judge_only_if(case is not None)
    assert case is not None
    (epoch,) = read_epochs(group, weighted_plug, contract, case, [data.draw(epochs(), label="epoch")])
    expect_holds(epoch.observation, check_ranks_apart(epoch))
