"""The streaming dataset's invariants, as pure functions over what every rank yielded.

Each takes the epochs read (``runs.StreamEpoch``) and returns a list of
:class:`Violation` (empty when the invariant holds); both runners call them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sampler_conformance.core.counting import index_counts
from sampler_conformance.core.evidence import Violation, counted, shorten
from sampler_conformance.core.invariants import Declared, Invariant, OneEpoch

from .case import StreamCase
from .contracts import (
    EVEN_BATCHES,
    EXACTLY_ONCE,
    MIXED_BY_WEIGHT,
    PADDED_ONCE,
    READS_THROUGH_WORKERS,
    TRUNCATED_ONCE,
)
from .items import MAIN_PROCESS
from .runs import StreamEpoch

BAD = "selftests.corpus.streams_bad"  # the known-bad datasets that prove the checks can fail
STREAM = "stream"
MIX = "stream_mix"

# The invariants judged on one epoch of every rank, each declared on its check below: the
# tests are generated from it (properties/test_streams.py, on simulated ranks and in real groups).
ONE_EPOCH: OneEpoch[Callable[[StreamEpoch], list[Violation]]] = OneEpoch()
# The others checked here, each by a check of its own.
DECLARED = Declared()

HANG = "the ranks with more batches wait in a collective the others never join, and DDP hangs"


def worker_name(rank: int, worker: int) -> str:
    return f"rank {rank}" if worker == MAIN_PROCESS else f"rank {rank} worker {worker}"


def _who_yielded(epoch: StreamEpoch, item: int) -> list[str]:
    found = []
    for rank, (batches, workers) in enumerate(zip(epoch.observation.batches or (), epoch.workers, strict=True)):
        for ids, worker in zip(batches, workers, strict=True):
            found += [worker_name(rank, worker)] * int(np.count_nonzero(ids == item))
    return found


@ONE_EPOCH.declare(
    Invariant(
        "item_ids",
        "items carry ids",
        "items whose id cannot be read (floats, strings, records without the id): nothing can be checked",
        f"{BAD}:FloatIds",
        proven_under=STREAM,
        promised_by=(READS_THROUGH_WORKERS,),
    )
)
def check_item_ids(epoch: StreamEpoch) -> list[Violation]:
    return []  # judged by reading: an item without an id fails the read itself


@ONE_EPOCH.declare(
    Invariant(
        "no_foreign_items",
        "no foreign items",
        "items from outside the dataset: off-by-one ranges, another layout's shards",
        f"{BAD}:OffByOne",
        proven_under=STREAM,
        promised_by=(READS_THROUGH_WORKERS,),
    )
)
def check_no_foreign_items(epoch: StreamEpoch) -> list[Violation]:
    n = epoch.case.dataset_size
    for rank, ids in enumerate(epoch.observation.indices):
        foreign = ids[(ids < 0) | (ids >= n)]
        if foreign.size:
            return [
                Violation(
                    "no_foreign_items",
                    f"rank {rank} yielded id {int(foreign[0])}, which the dataset does not hold: its ids are "
                    f"0 .. N-1 = 0 .. {n - 1} ({foreign.size} foreign items on this rank)",
                )
            ]
    return []


def _item_counts(epoch: StreamEpoch) -> np.ndarray:
    return index_counts([epoch.observation], epoch.case.dataset_size)


def _repeated(epoch: StreamEpoch, counts: np.ndarray, flag: str, why: str) -> list[Violation]:
    repeated = np.flatnonzero(counts > 1)
    if not repeated.size:
        return []
    item = int(repeated[0])
    return [
        Violation(
            flag,
            f"id {item} was yielded {int(counts[item])} times in one epoch, by {', '.join(_who_yielded(epoch, item))} "
            f"({repeated.size} ids more than once, {int(counts[repeated].sum() - repeated.size)} extra items): {why}",
        )
    ]


def _missing(epoch: StreamEpoch, counts: np.ndarray, flag: str) -> list[Violation]:
    missing = np.flatnonzero(counts == 0)
    if not missing.size:
        return []
    return [
        Violation(
            flag,
            f"{missing.size} of the {epoch.case.dataset_size} ids were never yielded in the epoch: {shorten(missing)}",
        )
    ]


def _streams(case: StreamCase) -> str:
    return f"W x workers = {case.world_size} x {case.workers} = {case.streams}"


@ONE_EPOCH.declare(
    Invariant(
        "exactly_once",
        "every item exactly once per epoch",
        "a missing worker split or rank split: every item num_workers or world_size times "
        "(pytorch/pytorch #30599, huggingface/datasets #3423, #5360)",
        f"{BAD}:NoWorkerSplit",
        proven_under=STREAM,
        promised_by=(EXACTLY_ONCE,),
    )
)
def check_exactly_once(epoch: StreamEpoch) -> list[Violation]:
    """Every id of the layout once, all (rank, worker) pairs together."""
    counts = _item_counts(epoch)
    why = "each (rank, worker) pair must read its own part of the data"
    return _repeated(epoch, counts, "exactly_once", why) + _missing(epoch, counts, "exactly_once")


@ONE_EPOCH.declare(
    Invariant(
        "mix_read_once",
        "no item twice in a mix",
        "sources read whole on every rank: the mix split after interleaving, or a source not split across ranks "
        "and workers (huggingface/datasets #7868, ByteDance-Seed/VeOmni #358)",
        f"{BAD}:MixUnsplit",
        proven_under=MIX,
        promised_by=(MIXED_BY_WEIGHT,),
    )
)
def check_mix_read_once(epoch: StreamEpoch) -> list[Violation]:
    """No id twice, all (rank, worker) pairs together: each reads its own share of each source."""
    why = "each (rank, worker) pair must read its own share of each source"
    return _repeated(epoch, _item_counts(epoch), "mix_read_once", why)


@ONE_EPOCH.declare(
    Invariant(
        "padded_once",
        "every item at least once, fewer than W x workers repeated",
        "equal counts bought with more repeats than needed: a short rank cycling its own shards until the longest "
        "ends weighs them more in training and inflates evaluation",
        f"{BAD}:PadsShortRanks",
        proven_under="stream_padded",
        promised_by=(PADDED_ONCE,),
    )
)
def check_padded_once(epoch: StreamEpoch) -> list[Violation]:
    """Every id at least once; fewer repeats than there are (rank, worker) pairs."""
    counts = _item_counts(epoch)
    repeats = int(np.maximum(counts - 1, 0).sum())
    violations = _missing(epoch, counts, "padded_once")
    if repeats >= epoch.case.streams:
        item = int(np.argmax(counts))
        violations.append(
            Violation(
                "padded_once",
                f"{repeats} of the epoch's {int(counts.sum())} items repeat others (id {item} {int(counts[item])} times, by "
                f"{', '.join(_who_yielded(epoch, item))}), where fewer than {_streams(epoch.case)} make every "
                f"rank's count equal: the repeated items weigh more in training and in evaluation",
            )
        )
    return violations


@ONE_EPOCH.declare(
    Invariant(
        "truncated_once",
        "no item twice, fewer than W x workers dropped",
        "equal counts bought by dropping more than needed: every rank cut to the shortest one's count "
        "(ray-project/ray #63285)",
        f"{BAD}:TruncatesToShortestRank",
        proven_under="stream_truncated",
        promised_by=(TRUNCATED_ONCE,),
    )
)
def check_truncated_once(epoch: StreamEpoch) -> list[Violation]:
    """No id twice; fewer dropped than there are (rank, worker) pairs."""
    counts = _item_counts(epoch)
    violations = _repeated(epoch, counts, "truncated_once", "only dropping may make the ranks' counts equal")
    missing = np.flatnonzero(counts == 0)
    if missing.size >= epoch.case.streams:
        violations.append(
            Violation(
                "truncated_once",
                f"{missing.size} of the {epoch.case.dataset_size} ids were dropped from the epoch "
                f"({shorten(missing)}), where fewer than {_streams(epoch.case)} make every rank's count equal",
            )
        )
    return violations


def evenly_divisible(epoch: StreamEpoch) -> bool:
    """N fills every rank's workers' batches exactly: then equal counts cost no padding."""
    case = epoch.case
    return case.dataset_size % (case.streams * case.batch_size) == 0


def batch_counts(epoch: StreamEpoch) -> tuple[int, ...]:
    """Each rank's batches: as the lock step counted them in a real group, else as read."""
    if epoch.counts is not None:
        return epoch.counts
    return tuple(len(batches) for batches in epoch.observation.batches or ())


@DECLARED(
    Invariant(
        "even_batches",
        "every rank runs the same number of batches",
        "a rank that runs out of batches first while the others wait in a collective: DDP hangs "
        "(pytorch/pytorch #141069, huggingface/datasets #6437)",
        f"{BAD}:ShardsPerRank",
        proven_under=STREAM,
        promised_by=(EVEN_BATCHES,),
    )
)
def check_even_batches(epoch: StreamEpoch) -> list[Violation]:
    counts = batch_counts(epoch)
    if len(set(counts)) <= 1:
        return []
    most = max(counts)
    first_out = min(range(len(counts)), key=lambda r: counts[r])
    longest = counts.index(most)
    stepped = "in lock step" if epoch.counts is not None else "(read in turn, counted)"
    return [
        Violation(
            "even_batches",
            f"rank {first_out} ran out at step {counts[first_out]} while rank {longest} still had batches until step "
            f"{most} {stepped} (batches per rank: {list(counts)}): {HANG}",
        )
    ]


def starvation_judged(epoch: StreamEpoch) -> bool:
    """Every (rank, worker) pair can be given data: at least as many shards as pairs, none empty."""
    case = epoch.case
    return len(case.shard_sizes) >= case.streams and min(case.shard_sizes, default=0) > 0


@DECLARED(
    Invariant(
        "no_starved_worker",
        "no starved worker",
        "workers left without data while others hold several shards (huggingface/datasets #8669)",
        f"{BAD}:CollapsedShards",
        proven_under=STREAM,
        promised_by=(READS_THROUGH_WORKERS,),
    )
)
def check_no_starved_worker(epoch: StreamEpoch) -> list[Violation]:
    case = epoch.case
    expected = list(range(case.num_workers)) if case.num_workers else [MAIN_PROCESS]
    for rank, workers in enumerate(epoch.workers):
        idle = [worker for worker in expected if worker not in set(workers)]
        if idle:
            names = ", ".join(worker_name(rank, w) for w in idle)
            return [
                Violation(
                    "no_starved_worker",
                    f"{names} yielded nothing, although the layout has {len(case.shard_sizes)} shards, none empty, "
                    f"and at least a batch of items for each of the {case.streams} (rank, worker) pairs: idle workers "
                    f"cost throughput, and "
                    f"their share went to the others",
                )
            ]
    return []


@DECLARED(
    Invariant(
        "same_items_any_workers",
        "the same items whatever num_workers",
        "padding or dropping decided per worker, so that the items repeated or dropped, and what training and "
        "evaluation see, change with num_workers or persistent_workers",
        f"{BAD}:PadsPerWorker",
        proven_under="stream_padded",
        promised_by=(
            PADDED_ONCE,
            TRUNCATED_ONCE,
        ),
    )
)
def check_same_items(first: StreamEpoch, second: StreamEpoch) -> list[Violation]:
    """The epoch's items, all ranks together, as a multiset: the same for both readings."""
    a, b = _item_counts(first), _item_counts(second)
    if np.array_equal(a, b):
        return []
    differs = np.flatnonzero(a != b)
    item = int(differs[0])
    return [
        Violation(
            "same_items_any_workers",
            f"read by {readers_said(first.case)}, the epoch holds {counted(int(a.sum()), 'item')}, id {item} counted "
            f"{int(a[item])}x; read by {readers_said(second.case)}, {counted(int(b.sum()), 'item')}, id {item} counted "
            f"{int(b[item])}x "
            f"({differs.size} ids counted differently): what the model trains and is evaluated on changes with "
            f"a loader setting",
        )
    ]


def readers_said(case: StreamCase) -> str:
    persistent = ", persistent" if case.persistent_workers else ""
    return f"num_workers={case.num_workers}{persistent}"
