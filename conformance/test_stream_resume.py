"""The streaming dataset's ``+resumable`` extension, in real process groups: every rank reads
its dataset through torchdata's ``StatefulDataLoader`` (the case's workers, persistent or
not), checkpoints ``loader.state_dict()`` after k batches of epoch e, and resumes it in a
fresh dataset and loader (``harness.subjects.iterable_dataset.resume``). The resumed run must
be the uninterrupted one, batch for batch. Without torchdata these tests skip, saying how to
install it.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sampler_conformance.core.evidence import expect_holds
from sampler_conformance.subjects.iterable_dataset.draws import checkpoints, draw_stream_case, epochs
from sampler_conformance.subjects.iterable_dataset.resume import resume_stream
from sampler_conformance.subjects.iterable_dataset.resume_checks import (
    check_epoch_after_resume,
    check_plain_state,
    check_resume_continues,
)

from .examples import round_trips
from .test_streams import MAX_GROUP_DATASET_SIZE


def _resumed(group, world_size, stream_plug, contract, data, cuts: int = 1, at_epoch_end: bool = False):
    """A case read by 0 to 3 workers, persistent or not, and its run resumed after ``cuts`` checkpoints."""
    case = draw_stream_case(
        data,
        stream_plug,
        world_size=world_size,
        persistent_workers=data.draw(st.booleans(), label="persistent_workers"),
        max_dataset_size=MAX_GROUP_DATASET_SIZE,
    )
    epoch = data.draw(epochs(), label="epoch")
    drawn = tuple(
        data.draw(checkpoints(case, at_epoch_end), label="k (batches before the checkpoint)") for _ in range(cuts)
    )
    return resume_stream(group, stream_plug, contract, case, epoch=epoch, cuts=drawn)


@pytest.mark.invariant("stream_resume_continues")
@round_trips
@given(data=st.data())
def test_stream_resume_continues(stateful_dataloader, group, world_size, stream_plug, contract, data):
    """Resumed after k batches of epoch e (none, some, all): the k batches and the rest are the uninterrupted epoch."""
    run = _resumed(group, world_size, stream_plug, contract, data)
    expect_holds(run.interrupted.observation, check_resume_continues(run))


@pytest.mark.invariant("stream_resumes_compose")
@round_trips
@given(data=st.data())
def test_stream_resumes_compose(stateful_dataloader, group, world_size, stream_plug, contract, data):
    """Resumed after k batches, then again from the resumed run after k' more: still the uninterrupted epoch."""
    run = _resumed(group, world_size, stream_plug, contract, data, cuts=2)
    expect_holds(run.interrupted.observation, check_resume_continues(run, "stream_resumes_compose"))


@pytest.mark.invariant("stream_epoch_after_resume")
@round_trips
@given(data=st.data())
def test_stream_epoch_after_resume(stateful_dataloader, group, world_size, stream_plug, contract, data):
    """Resumed after k batches of epoch e, or at its end: the resumed loader's epoch e + 1 is the uninterrupted one."""
    run = _resumed(group, world_size, stream_plug, contract, data, at_epoch_end=True)
    expect_holds(run.after.observation, check_epoch_after_resume(run))


@pytest.mark.invariant("stream_plain_state")
@round_trips
@given(data=st.data())
def test_stream_plain_state(stateful_dataloader, group, world_size, stream_plug, contract, data):
    """The loader's state, the dataset's within it, goes through torch.save and torch.load(weights_only=True)."""
    run = _resumed(group, world_size, stream_plug, contract, data)
    expect_holds(run.interrupted.observation, check_plain_state(run))
