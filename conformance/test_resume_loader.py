"""R8: the resumable extension through torchdata's ``StatefulDataLoader``, in real process groups.

Every rank builds its sampler from the group, hands it to a ``StatefulDataLoader`` with
``num_workers`` 0 or 2, takes k batches of epoch e, checkpoints ``loader.state_dict()`` and
resumes it in a fresh sampler and loader (docs/resume-and-elastic.md, "The resume
protocol", step 8). The k batches and the rest must be the uninterrupted loader's epoch e,
batch for batch, and the next epoch the uninterrupted one. Without torchdata the test
skips, saying how to install it.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sampler_conformance.core.evidence import expect_holds
from sampler_conformance.subjects.index_sampler.resume_checks import (
    check_next_passes,
    compare_ranks,
    expect_stateful,
    joined,
)
from sampler_conformance.subjects.index_sampler.resume_draws import checkpoint_at, drawn, pass_items
from sampler_conformance.subjects.index_sampler.scenarios.resume_loader import (
    LOADER,
    loader_batches,
    resume_through_loader,
)

from .examples import MAX_LOADER_DATASET_SIZE, round_trips, with_workers

FLAG = "resumes_through_loader"


def _resumes_through_loader(group, world_size, sampler_plug, contract, drop_last, num_workers, data):
    """Resumed from loader.state_dict() after k batches, every rank's loader yields the rest of
    the uninterrupted loader's epoch, batch for batch, and then the same next epoch."""
    case, epoch = drawn(data, sampler_plug, contract, drop_last, world_size, MAX_LOADER_DATASET_SIZE)
    k = checkpoint_at(
        data, loader_batches(contract, case, pass_items(contract, case)), label="k (batches before the checkpoint)"
    )
    run = resume_through_loader(group, sampler_plug, contract, case, epoch=epoch, cut=k, num_workers=num_workers)
    expect_stateful(run, FLAG)
    how = (
        f"through {LOADER}(num_workers={num_workers}), resumed after {k} batch{'' if k == 1 else 'es'} of epoch "
        f"{epoch} (loader.state_dict(), then load_state_dict(state) into a fresh sampler and loader, set_epoch({epoch}))"
    )
    expect_holds(
        run.uninterrupted[0],
        compare_ranks(
            FLAG,
            run.uninterrupted[0],
            joined(run),
            f"{how}, the epoch's batches differ from the uninterrupted loader's",
        )
        or check_next_passes(FLAG, run, how),
    )


@pytest.mark.invariant(FLAG)
@round_trips
@given(data=st.data())
def test_resume_through_stateful_dataloader(
    stateful_dataloader, group, world_size, sampler_plug, contract, drop_last, data
):
    """num_workers=0: the loader's state is the sampler's, taken in the rank's own process."""
    _resumes_through_loader(group, world_size, sampler_plug, contract, drop_last, 0, data)


@pytest.mark.invariant(FLAG)
@with_workers
@given(data=st.data())
def test_resume_through_stateful_dataloader_with_workers(
    stateful_dataloader, group, world_size, sampler_plug, contract, drop_last, data
):
    """num_workers=2: the state also carries what the workers had prefetched."""
    _resumes_through_loader(group, world_size, sampler_plug, contract, drop_last, 2, data)
