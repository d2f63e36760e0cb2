"""A real DataLoader over the sampler in every rank, set_epoch each epoch as the docs prescribe.

Every rank must get the same number of batches (the ranks all-reduce their counts:
unequal counts are what hang DDP), and what comes out of the loader must be what the
sampler yields: a twin of it, built the same way and given the same set_epoch before one
pass of its own (harness.subjects.index_sampler.scenarios.loader).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sampler_conformance.core.evidence import expect_holds
from sampler_conformance.subjects.index_sampler.draws import draw_case, epochs
from sampler_conformance.subjects.index_sampler.loader_checks import loader_violations
from sampler_conformance.subjects.index_sampler.scenarios.loader import run_loader

from .examples import MAX_LOADER_DATASET_SIZE, round_trips, with_workers

LOADER_FLAGS = [
    pytest.param(f, marks=pytest.mark.invariant(f), id=f) for f in ("equal_batches", "loader_yields_sampler")
]


def _check_loader(group, world_size, sampler_plug, contract, drop_last, data, num_workers, flag):
    if not contract.finite:
        pytest.skip(
            f"contract {contract.name!r} describes an endless sampler: a DataLoader over it never ends an epoch"
        )
    case = draw_case(
        data,
        sampler_plug,
        drop_last=drop_last,
        contract=contract,
        world_size=world_size,
        max_dataset_size=MAX_LOADER_DATASET_SIZE,
    )
    loader_drop_last = data.draw(st.booleans(), label="DataLoader drop_last")
    chosen = data.draw(st.lists(epochs(), min_size=2, max_size=2, unique=True), label="epochs")
    runs = run_loader(
        group, sampler_plug.spec, contract, case, chosen, num_workers=num_workers, loader_drop_last=loader_drop_last
    )
    batch_size = None if contract.yields_batches else case.batch_size
    for run in runs:
        violations = loader_violations(run, batch_size, loader_drop_last)
        expect_holds(run.sampler, [v for v in violations if v.flag == flag])


@pytest.mark.parametrize("flag", LOADER_FLAGS)
@round_trips
@given(data=st.data())
def test_dataloader_in_process(group, world_size, sampler_plug, contract, drop_last, flag, data):
    """num_workers=0: equal batch counts on every rank (all-reduced), and the loader yields the sampler's indices."""
    _check_loader(group, world_size, sampler_plug, contract, drop_last, data, 0, flag)


@pytest.mark.parametrize("flag", LOADER_FLAGS)
@with_workers
@given(data=st.data())
def test_dataloader_with_workers(group, world_size, sampler_plug, contract, drop_last, flag, data):
    """num_workers=2 (worker processes forked by each rank): the same, through the workers."""
    _check_loader(group, world_size, sampler_plug, contract, drop_last, data, 2, flag)
