"""The batch sampler's invariants in real process groups: every rank builds its own sampler in
its own process, and the ranks read their batches in lock step, as a training loop's gradient
all-reduce makes them (``harness.subjects.batch_sampler.scenarios``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sampler_conformance.core.evidence import expect_holds
from sampler_conformance.subjects.batch_sampler.checks import ONE_EPOCH, check_processes_agree
from sampler_conformance.subjects.batch_sampler.draws import draw_batch_case, epochs
from sampler_conformance.subjects.batch_sampler.scenarios import read_epochs

from .examples import round_trips

# Every step of a lock-step epoch is an all-reduce, and so is every step of shrinking a failing
# case: keep N where that is quick (the in-process tests draw up to 200).
MAX_GROUP_DATASET_SIZE = 48


@pytest.mark.parametrize("flag", [pytest.param(f, marks=pytest.mark.invariant(f), id=f) for f in ONE_EPOCH])
@round_trips
@given(data=st.data())
def test_batch_epoch_in_lock_step(group, world_size, batch_plug, contract, flag, data):
    """One epoch, every rank in its own process, stepping together: a rank that runs out is
    seen at the step it ran out, and its peers are never left waiting."""
    case = draw_batch_case(data, batch_plug, contract, world_size=world_size, max_dataset_size=MAX_GROUP_DATASET_SIZE)
    (epoch,) = read_epochs(group, batch_plug, contract, case, [data.draw(epochs(), label="epoch")])
    expect_holds(epoch.observation, ONE_EPOCH[flag](epoch, batch_plug, contract))


@pytest.mark.invariant("batch_plan_agrees")
@round_trips
@given(data=st.data())
def test_batch_plan_agrees_across_processes(group, world_size, batch_plug, contract, data):
    """Every rank's process builds the same rank's sampler for the same case: all plan the same batches."""
    case = draw_batch_case(data, batch_plug, contract, world_size=world_size, max_dataset_size=MAX_GROUP_DATASET_SIZE)
    as_rank = data.draw(st.integers(0, world_size - 1), label="rank built in every process")
    (epoch,) = read_epochs(group, batch_plug, contract, case, [data.draw(epochs(), label="epoch")], as_rank=as_rank)
    expect_holds(epoch.observation, check_processes_agree(epoch, as_rank))
