"""The data loader's invariants: every rank's loader built for the drawn case, its epoch hook
called before each epoch, its batches' instance ids read and judged together; under
``+resumable``, a run checkpointed through the loader's own ``state_dict()`` and resumed in fresh
loaders (``harness.subjects.data_loader.resume``). Each test runs where its invariant is declared
to (``ranks``): the one-epoch, epoch-order and resume tests on simulated ranks and in real
process groups, where each rank builds its own loader in its own process (and the ranks read an
epoch in lock step); the DP-size tests, and a resume on another DP size, on simulated ranks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sampler_conformance.core.comparing import fresh_epochs, reread_differs, two_epochs
from sampler_conformance.core.evidence import expect_holds
from sampler_conformance.subjects.data_loader.checks import (
    ONE_EPOCH,
    check_batches_differ,
    check_same_batches,
    check_same_global_batches,
)
from sampler_conformance.subjects.data_loader.draws import (
    ELASTIC_WORLD_SIZES,
    MIN_COMPARED_BATCHES,
    checkpoint_at,
    draw_loader_case,
    epochs,
    saved_and_resumed_on,
)
from sampler_conformance.subjects.data_loader.fixtures import requires_parameter
from sampler_conformance.subjects.data_loader.resume import checkpoint_loader, resume_loader, resume_on_other_dp_size
from sampler_conformance.subjects.data_loader.resume_checks import (
    check_epoch_after_resume,
    check_plain_state,
    check_resume_continues,
    check_resume_on_other_dp_size,
)
from sampler_conformance.subjects.data_loader.scenarios import read_epochs


def _one_epoch(data, ranks, loader_plug, contract, **fixed):
    case = draw_loader_case(data, loader_plug, world_size=ranks.world_size, **fixed)
    (epoch,) = read_epochs(ranks, loader_plug, contract, case, [data.draw(epochs(), label="epoch")])
    return epoch


@pytest.mark.invariant("loader_runs")
@given(data=st.data())
def test_loader_runs(ranks, loader_plug, contract, data):
    """Empty datasets, fewer instances than a global batch, more ranks than instances: each epoch ends without raising."""
    epoch = _one_epoch(data, ranks, loader_plug, contract, max_dataset_size=12)
    expect_holds(epoch.observation, [])


@pytest.mark.parametrize("flag", [pytest.param(f, marks=pytest.mark.invariant(f), id=f) for f in ONE_EPOCH.flags])
@given(data=st.data())
def test_loader_epoch(ranks, loader_plug, contract, flag, data):
    """One epoch of every rank, judged together."""
    epoch = _one_epoch(data, ranks, loader_plug, contract)
    expect_holds(epoch.observation, ONE_EPOCH[flag].judge(epoch, contract))


@pytest.mark.invariant("loader_deterministic")
@given(data=st.data())
def test_loader_deterministic(ranks, loader_plug, contract, data):
    """The batches of epoch e are a function of the seed and e: a loader that read another
    epoch first, and a fresh one (a run resumed at e, or the script run again), read the same."""
    requires_parameter(loader_plug, "seed")
    case = draw_loader_case(data, loader_plug, world_size=ranks.world_size)
    before, epoch = data.draw(st.lists(epochs(), min_size=2, max_size=2, unique=True), label="epochs")
    _, first = read_epochs(ranks, loader_plug, contract, case, [before, epoch])
    has_hook = first.hook is not None
    *_, second = read_epochs(ranks, loader_plug, contract, case, fresh_epochs(has_hook, before, epoch), reading=1)
    what = reread_differs(has_hook, before, epoch)
    expect_holds(second.observation, check_same_batches(first, second, "loader_deterministic", what))


@pytest.mark.invariant("loader_reshuffles")
@given(data=st.data())
def test_loader_reshuffles(ranks, loader_plug, contract, data):
    """One loader per rank, its epoch hook called before each of two epochs: the batches differ."""
    case = draw_loader_case(data, loader_plug, world_size=ranks.world_size, min_global_batches=MIN_COMPARED_BATCHES)
    chosen = data.draw(st.lists(epochs(), min_size=2, max_size=2, unique=True), label="epochs")
    first, second = read_epochs(ranks, loader_plug, contract, case, chosen)
    how = two_epochs(first.hook is not None, *chosen)
    expect_holds(second.observation, check_batches_differ(first, second, "loader_reshuffles", how))


@pytest.mark.invariant("loader_same_global_batches")
@given(data=st.data())
def test_same_global_batches_at_every_dp_size(ranks, loader_plug, contract, data):
    """The same case read at DP sizes 1, 2 and 4 (the global batch a multiple of 4): global
    batch g, every rank's batch g together, holds the same instances at each."""
    largest = max(ELASTIC_WORLD_SIZES)
    case = draw_loader_case(
        data,
        loader_plug,
        world_size=largest,
        batch_multiple_of=largest,
        min_global_batches=MIN_COMPARED_BATCHES,
        with_workers=False,  # workers change no DP size's order: read without them, 3 DP sizes a case
    )
    epoch = data.draw(epochs(), label="epoch")
    read = [
        read_epochs(ranks, loader_plug, contract, case.with_(world_size=w), [epoch])[0] for w in ELASTIC_WORLD_SIZES
    ]
    expect_holds(read[-1].observation, check_same_global_batches(read))


# A resumed epoch holds at least this many whole global batches, so that a cut can fall inside it.
MIN_RESUMED_BATCHES = 2


def _checkpointed(data, ranks, loader_plug, contract, take=resume_loader):
    """``take``'s run of a drawn case whose epoch e holds at least two global batches, cut after k of them."""
    case = draw_loader_case(
        data,
        loader_plug,
        world_size=ranks.world_size,
        min_global_batches=MIN_RESUMED_BATCHES,
    )
    epoch = data.draw(epochs(), label="epoch")
    cut = checkpoint_at(data, case.global_batches)
    return take(ranks, loader_plug, contract, case, epoch=epoch, cut=cut)


@pytest.mark.invariant("loader_resume_continues")
@given(data=st.data())
def test_loader_resume_continues(ranks, loader_plug, contract, data):
    """Checkpointed after k batches of epoch e through the loader's own state_dict(), a fresh
    loader given its epoch hook and the state (in either order) reads batch k + 1 on, exactly."""
    run = _checkpointed(data, ranks, loader_plug, contract)
    expect_holds(run.uninterrupted[0].observation, check_resume_continues(run))


@pytest.mark.invariant("loader_epoch_after_resume")
@given(data=st.data())
def test_loader_epoch_after_resume(ranks, loader_plug, contract, data):
    """The resumed loader's epoch e + 1, after its epoch hook, is the uninterrupted run's."""
    run = _checkpointed(data, ranks, loader_plug, contract)
    expect_holds(run.uninterrupted[1].observation, check_epoch_after_resume(run))


@pytest.mark.invariant("loader_plain_state")
@given(data=st.data())
def test_loader_plain_state(ranks, loader_plug, contract, data):
    """Each rank's state_dict() after k batches goes through torch.save and torch.load(weights_only=True)."""
    run = _checkpointed(data, ranks, loader_plug, contract, take=checkpoint_loader)
    expect_holds(run.before.observation, check_plain_state(run))


@pytest.mark.invariant("loader_resume_on_other_dp_size")
@given(data=st.data())
def test_loader_resume_on_other_dp_size(ranks, loader_plug, contract, data):
    """Rank 0's checkpoint after k global batches at DP size W1, loaded into every rank of DP
    size W2 (W1, W2 in 1, 2, 4): the global batches from k + 1 on are the uninterrupted run's."""
    largest = max(ELASTIC_WORLD_SIZES)
    saved_on, resumed_on = saved_and_resumed_on(data)
    case = draw_loader_case(
        data,
        loader_plug,
        world_size=largest,
        batch_multiple_of=largest,
        min_global_batches=MIN_RESUMED_BATCHES,
        with_workers=False,
    ).with_(world_size=resumed_on)
    epoch = data.draw(epochs(), label="epoch")
    cut = checkpoint_at(data, case.global_batches)
    run = resume_on_other_dp_size(ranks, loader_plug, contract, case, epoch=epoch, cut=cut, saved_on=saved_on)
    expect_holds(run.resumed.observation, check_resume_on_other_dp_size(run))
