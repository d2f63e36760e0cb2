"""The seed 001 experiment (shared/seeds/001_*.txt) in a real 2-rank group, batch size 4.

The article ran DistributedSampler under torch.distributed.launch on two GPUs, two
epochs, and printed each rank's batches. Its printed permutations depend on the torch
version; what it reports about their structure does not, and is asserted here.
"""

from __future__ import annotations

import numpy as np
import pytest

from sampler_conformance.core.case import Observation
from sampler_conformance.core.comparing import check_same_indices
from sampler_conformance.core.evidence import expect_holds, fail, shorten
from sampler_conformance.subjects.index_sampler.case import IndexCase
from sampler_conformance.subjects.index_sampler.checks import structural_violations
from sampler_conformance.subjects.index_sampler.layout_checks import check_pads_from_head
from sampler_conformance.subjects.index_sampler.loader_checks import loader_violations
from sampler_conformance.subjects.index_sampler.order_checks import missing_set_epoch
from sampler_conformance.subjects.index_sampler.runs import LoaderEpochRun
from sampler_conformance.subjects.index_sampler.scenarios.loader import run_loader

BATCH_SIZE = 4
WORLD_SIZE = 2
NO_SET_EPOCH = (None, None)
SET_EPOCH = (0, 1)


@pytest.fixture(autouse=True)
def index_sampler(sampler_plug, contract):
    if not contract.finite or contract.yields_batches:
        pytest.skip(
            f"these cases feed an index sampler to a DataLoader, two ranks and batches of {BATCH_SIZE}; contract "
            f"{contract.name!r} is not one of an index sampler's"
        )


def _experiment(pair, plug, contract, dataset_size, epochs, loader_drop_last, with_sampler=True):
    case = IndexCase(dataset_size=dataset_size, world_size=WORLD_SIZE, batch_size=BATCH_SIZE)
    runs = run_loader(
        pair, plug.spec, contract, case, epochs, loader_drop_last=loader_drop_last, with_sampler=with_sampler
    )
    for run in runs:
        if with_sampler:
            expect_holds(run.sampler, loader_violations(run, BATCH_SIZE, loader_drop_last))
    return runs


def _loaded(run: LoaderEpochRun) -> Observation:
    """What the loader gave each rank this epoch, as an observation of the sampler."""
    indices = tuple(np.concatenate(b) if b else np.empty(0, dtype=np.int64) for b in run.batches)
    return Observation(run.sampler.case, indices, tuple(len(i) for i in indices))


def _expect_batch_sizes(runs, expected: list[int], why: str) -> None:
    """Every rank's batches have the article's sizes. Charged to what differs: the batch
    counts across ranks (equal_batches), else the items per rank (equal_length); the loader
    cuts batches itself, so given equal counts of items only those two can differ."""
    for run in runs:
        sizes = [[len(b) for b in batches] for batches in run.batches]
        for rank, (got, batches) in enumerate(zip(sizes, run.batches, strict=True)):
            if got != expected:
                flag = "equal_batches" if len({len(s) for s in sizes}) > 1 else "equal_length"
                fail(
                    flag,
                    f"rank {rank} should get batches of sizes {expected} ({why}), got {got}: "
                    f"{[shorten(b) for b in batches]}; batch sizes per rank: {sizes}",
                    run.sampler.case,
                    _loaded(run),
                )


def test_case1_without_a_sampler_every_rank_reads_everything(pair, sampler_plug, contract):
    """Case 1: DataLoader(N=8, batch_size=4, drop_last=True) without a sampler: each rank iterates all 8 items."""
    runs = _experiment(pair, sampler_plug, contract, 8, NO_SET_EPOCH, loader_drop_last=True, with_sampler=False)
    expected = [list(range(0, 4)), list(range(4, 8))]
    for run in runs:
        for rank, batches in enumerate(run.batches):
            got = [b.tolist() for b in batches]
            if got != expected:
                fail(
                    "loader_yields_sampler",
                    f"without a sampler rank {rank} should read {expected}, got {got}",
                    run.sampler.case,
                    _loaded(run),
                )


@pytest.mark.invariant("deterministic")
def test_case2_same_split_every_epoch_without_set_epoch(pair, sampler_plug, contract):
    """Case 2: N=8 with the sampler, no set_epoch: the data is split in two halves, the same in both epochs."""
    first, second = _experiment(pair, sampler_plug, contract, 8, NO_SET_EPOCH, loader_drop_last=True)
    _expect_batch_sizes((first, second), [4], "8 items over 2 ranks")
    expect_holds(_loaded(first), structural_violations(_loaded(first), contract))
    expect_holds(
        _loaded(second),
        check_same_indices(
            _loaded(first),
            _loaded(second),
            "deterministic",
            "without set_epoch the second epoch must repeat the first epoch's split",
        ),
    )


@pytest.mark.invariant("reshuffles_on_set_epoch")
def test_case3_reshuffle_with_set_epoch(pair, sampler_plug, contract):
    """Case 3: N=8, set_epoch(epoch) each epoch: both epochs split the data in two, differently."""
    first, second = _experiment(pair, sampler_plug, contract, 8, SET_EPOCH, loader_drop_last=True)
    if not first.has_set_epoch:
        expect_holds(first.sampler, [missing_set_epoch(first.sampler.case.with_(epoch=SET_EPOCH[0]))])
    _expect_batch_sizes((first, second), [4], "8 items over 2 ranks")
    for run in (first, second):
        expect_holds(_loaded(run), structural_violations(_loaded(run), contract))
    if all(np.array_equal(a, b) for a, b in zip(_loaded(first).indices, _loaded(second).indices, strict=True)):
        fail(
            "reshuffles_on_set_epoch",
            "set_epoch(0) and set_epoch(1) gave every rank the same batches",
            second.sampler.case,
            _loaded(second),
        )


@pytest.mark.invariant("equal_length")
def test_case4_six_items_three_per_rank(pair, sampler_plug, contract):
    """Case 4: N=6, drop_last=False: each rank gets 3 items, one batch of 3; together all 6, once each."""
    runs = _experiment(pair, sampler_plug, contract, 6, NO_SET_EPOCH, loader_drop_last=False)
    _expect_batch_sizes(runs, [3], "6 items over 2 ranks")
    for run in runs:
        expect_holds(_loaded(run), structural_violations(_loaded(run), contract))


@pytest.mark.invariant("pads_from_head")
@pytest.mark.parametrize("epochs", [NO_SET_EPOCH, SET_EPOCH], ids=["no_set_epoch", "set_epoch"])
def test_case5_five_items_padded_with_the_head(pair, sampler_plug, contract, epochs):
    """Case 5: N=5: each rank gets 3 items; the one padded item repeats the head of that epoch's order."""
    runs = _experiment(pair, sampler_plug, contract, 5, epochs, loader_drop_last=False)
    _expect_batch_sizes(runs, [3], "5 items padded to 6 over 2 ranks")
    for run in runs:
        loaded = _loaded(run)
        expect_holds(loaded, structural_violations(loaded, contract) + check_pads_from_head(loaded, contract))


@pytest.mark.invariant("equal_batches")
def test_case6_last_batch_holds_one_item(pair, sampler_plug, contract):
    """Case 6: N=10, drop_last=False: each rank gets 5 items, a batch of 4 then a batch of 1."""
    runs = _experiment(pair, sampler_plug, contract, 10, NO_SET_EPOCH, loader_drop_last=False)
    _expect_batch_sizes(runs, [4, 1], "5 items per rank, batch size 4")
    for run in runs:
        expect_holds(_loaded(run), structural_violations(_loaded(run), contract))


@pytest.mark.invariant("equal_batches")
def test_case7_drop_last_drops_the_short_batch(pair, sampler_plug, contract):
    """Case 7: N=10, DataLoader drop_last=True: each rank keeps one batch of 4; its fifth item is dropped."""
    runs = _experiment(pair, sampler_plug, contract, 10, NO_SET_EPOCH, loader_drop_last=True)
    _expect_batch_sizes(runs, [4], "the short batch of 1 is dropped")
    for run in runs:
        loaded = _loaded(run)
        counts = np.bincount(np.concatenate(loaded.indices), minlength=10)
        if counts.max() > 1 or counts.sum() != 8:
            fail(
                "disjoint",
                f"the two ranks' 8 loaded items should be distinct, got {shorten(np.concatenate(loaded.indices))}",
                run.sampler.case,
                loaded,
            )
