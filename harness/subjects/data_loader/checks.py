"""The data loader's checks: each reads the ranks' batches (``runs.LoaderEpoch``) and returns
the violations of its invariant, worded for the user."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from sampler_conformance.core.comparing import first_difference
from sampler_conformance.core.counting import unequal_counts
from sampler_conformance.core.evidence import Violation, shorten
from sampler_conformance.core.invariants import Declared, Invariant, OneEpoch, Where

from .contracts import (
    EACH_INSTANCE_ONCE,
    EQUAL_BATCHES,
    LOADER_RUNS,
    RANK_SHARE,
    SAME_GLOBAL_BATCHES,
    LoaderContract,
)
from .runs import LoaderEpoch

BAD = "selftests.corpus.loader_bad"  # the known-bad loaders that prove the checks can fail
DATA_LOADER = "data_loader"
ELASTIC = "data_loader+elastic"
# What one epoch of every rank shows, and a resume on the same DP size, is judged on simulated ranks
# and in real groups, each rank's loader in its own process (an epoch read in lock step); what
# compares DP sizes, on simulated ranks only (docs/data-loaders.md, "Where the ranks run").
EVERYWHERE = Where.BOTH
SIMULATED = Where.IN_PROCESS

# What one epoch shows, each invariant declared on its check below: the tests are generated
# from it (properties/test_loaders.py, test_loader_epoch).
ONE_EPOCH: OneEpoch[Callable[[LoaderEpoch, LoaderContract], list[Violation]]] = OneEpoch()
# The others checked here, each by a check of its own.
DECLARED = Declared()


@ONE_EPOCH.declare(
    Invariant(
        "loader_batch_ids",
        "every batch carries the ids of its instances, in range(N)",
        "batches that carry no ids, or ids of another unit than the instance (token offsets, sample counters "
        "across epochs): the instance an id names is not the one trained on",
        f"{BAD}:TokenOffsetsAsIds",
        proven_under=DATA_LOADER,
        where=EVERYWHERE,
        promised_by=(LOADER_RUNS,),
    )
)
def check_batch_ids(epoch: LoaderEpoch, contract: LoaderContract | None = None) -> list[Violation]:
    size = epoch.case.dataset_size
    for rank, batches in enumerate(epoch.batches):
        for step, batch in enumerate(batches):
            outside = batch[(batch < 0) | (batch >= size)]
            if outside.size:
                return [
                    Violation(
                        "loader_batch_ids",
                        f"rank {rank}'s batch {step} holds ids {shorten(outside)}, outside range(N={size})",
                    )
                ]
    return []


@ONE_EPOCH.declare(
    Invariant(
        "loader_each_instance_once",
        "each instance in exactly one rank's batch per epoch, an incomplete final global batch left out",
        "an incomplete final global batch padded with instances from the epoch's start (DistributedSampler's "
        "drop_last=False under a loader): trained on twice; or more than it left out",
        f"{BAD}:PadsLastGlobalBatch",
        proven_under=DATA_LOADER,
        where=EVERYWHERE,
        promised_by=(EACH_INSTANCE_ONCE,),
    )
)
def check_each_instance_once(epoch: LoaderEpoch, contract: LoaderContract | None = None) -> list[Violation]:
    """No instance twice across ranks and batches; those never yielded fewer than a global
    batch (an incomplete final one, left out, and nothing more)."""
    case = epoch.case
    size = case.dataset_size
    yielded = np.concatenate(epoch.observation.indices) if epoch.observation.indices else np.empty(0, np.int64)
    counts = np.bincount(yielded[(yielded >= 0) & (yielded < size)], minlength=size)
    twice = np.flatnonzero(counts > 1)
    if twice.size:
        return [
            Violation(
                "loader_each_instance_once",
                f"{twice.size} instance(s) yielded more than once in the epoch, {shorten(twice)} (instance "
                f"{int(twice[0])} {int(counts[twice[0]])} times): trained on twice",
            )
        ]
    missing = np.flatnonzero(counts == 0)
    if missing.size < case.global_batch_size:
        return []
    return [
        Violation(
            "loader_each_instance_once",
            f"{missing.size} instance(s) never yielded, {shorten(missing)}: an incomplete final global batch holds "
            f"fewer than global_batch_size={case.global_batch_size}, so more than it was left out",
        )
    ]


@ONE_EPOCH.declare(
    Invariant(
        "loader_rank_batch_size",
        "each rank's batch holds global_batch_size // W instances",
        "an incomplete final global batch kept and split across the ranks: short or empty batches on the last "
        "step, which change the step's loss scale and break a compiled step's fixed shapes",
        f"{BAD}:KeepsIncompleteGlobalBatch",
        proven_under=DATA_LOADER,
        where=EVERYWHERE,
        promised_by=(RANK_SHARE,),
    )
)
def check_rank_batch_size(epoch: LoaderEpoch, contract: LoaderContract | None = None) -> list[Violation]:
    expected = epoch.case.rank_batch_size
    for rank, batches in enumerate(epoch.batches):
        for step, batch in enumerate(batches):
            if batch.size != expected:
                return [
                    Violation(
                        "loader_rank_batch_size",
                        f"rank {rank}'s batch {step} holds {batch.size} instance(s), {shorten(batch)}, where each "
                        f"rank's batch is global_batch_size={epoch.case.global_batch_size} // W={epoch.case.world_size}"
                        f" = {expected}",
                    )
                ]
    return []


@ONE_EPOCH.declare(
    Invariant(
        "loader_equal_batch_counts",
        "every rank reads the same number of batches per epoch",
        "the instances of an incomplete final global batch given to the ranks they fill a batch for, and not the "
        "others: the ranks that have one more step wait forever in its gradient all-reduce",
        f"{BAD}:LastGlobalBatchToSomeRanks",
        proven_under=DATA_LOADER,
        where=EVERYWHERE,
        promised_by=(EQUAL_BATCHES,),
    )
)
def check_equal_batch_counts(epoch: LoaderEpoch, contract: LoaderContract | None = None) -> list[Violation]:
    violations = unequal_counts("loader_equal_batch_counts", epoch.batch_counts)
    if epoch.stepped is None:
        return violations
    return [Violation(v.flag, f"{v.message} (seen in lock step, in a real group)") for v in violations]


def check_same_batches(first: LoaderEpoch, second: LoaderEpoch, flag: str, what: str) -> list[Violation]:
    for rank, (a, b) in enumerate(zip(first.batches, second.batches, strict=True)):
        if not _same_batches(a, b):
            return [
                Violation(flag, f"{what}: on rank {rank}, {first_difference(a, b, 'batch')}{_through_workers(second)}")
            ]
    return []


def check_batches_differ(first: LoaderEpoch, second: LoaderEpoch, flag: str, what: str) -> list[Violation]:
    # An empty second epoch differs, but judges nothing: without this, such a loader is never judged.
    if any(first.batch_counts) and not any(second.batch_counts):
        return [
            Violation(
                flag,
                f"{what}: the second epoch read no batch on any rank, where the first read "
                f"{sum(first.batch_counts)}: the loader serves one epoch only",
            )
        ]
    if all(_same_batches(a, b) for a, b in zip(first.batches, second.batches, strict=True)):
        shown = ", ".join(shorten(batch) for batch in first.batches[0][:3])
        return [
            Violation(
                flag, f"{what}: every rank read the same batches, rank 0's beginning {shown}{_through_workers(second)}"
            )
        ]
    return []


def _through_workers(epoch: LoaderEpoch) -> str:
    """Where the loaders read through workers, what persistent ones keep (huggingface/datasets #6673)."""
    workers = epoch.case.num_workers
    if not workers:
        return ""
    return (
        f"; read through num_workers={workers}: persistent workers keep the copy of the dataset, and the epoch, they "
        f"started with, so an epoch hook that reaches the main process only leaves them on their first epoch's order"
    )


@DECLARED(
    Invariant(
        "loader_same_global_batches",
        "the same global batches at every DP size",
        "a loader that shards first and shuffles each rank's share by itself: the global batches "
        "change with the DP size, so a run resumed on another number of ranks trains on other batches, some "
        "instances twice and others never",
        f"{BAD}:PerRankShuffle",
        proven_under=ELASTIC,
        where=SIMULATED,
        judged_from=2,  # an order: one instance cannot show it
        promised_by=(SAME_GLOBAL_BATCHES,),
    )
)
def check_same_global_batches(epochs: Sequence[LoaderEpoch]) -> list[Violation]:
    """Global batch g, every rank's batch g together, holds the same instances in each of
    ``epochs``, read at different DP sizes for the same case otherwise."""
    first, *others = epochs
    steps = max(len(batches) for epoch in epochs for batches in epoch.batches)
    for other in others:
        for step in range(steps):
            a, b = first.global_batch(step), other.global_batch(step)
            if not np.array_equal(a, b):
                return [
                    Violation(
                        "loader_same_global_batches",
                        f"global batch {step} holds {shorten(a)} at W={first.case.world_size} and {shorten(b)} at "
                        f"W={other.case.world_size}: a run resumed on another number of ranks trains on other "
                        f"batches",
                    )
                ]
    return []


def _same_batches(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
