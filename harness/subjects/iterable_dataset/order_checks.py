"""The streaming dataset's order invariants (``STREAM_ORDER``): every process reads the same
order, a function of the seed and the epoch, changed by either. Pure functions over the
epochs read (``runs.StreamEpoch``), as in ``checks.py``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sampler_conformance.core.comparing import check_same_indices, first_difference
from sampler_conformance.core.evidence import Violation, shorten
from sampler_conformance.core.invariants import Declared, Invariant, Where

from .checks import BAD, STREAM, readers_said
from .contracts import STREAM_ORDER
from .runs import StreamEpoch

# Below this many items two shuffled orders may coincide by chance (1/10! for a full
# permutation of 10): the reshuffle tests draw datasets at least this large.
MIN_COMPARABLE_ITEMS = 10
# Epochs the reshuffle tests read. A shuffle with m equally likely orders gives the first
# epoch's order to all the others with probability m**-(RESHUFFLE_EPOCHS - 1): 1/16 for a
# shuffle of 2 shards and nothing else, 1/20,736 for m = 12, below 1e-8 for m >= 100.
RESHUFFLE_EPOCHS = 5
DECLARED = Declared()


def check_same_stream(
    first: StreamEpoch, second: StreamEpoch, flag: str, what: str, readings: tuple[str, str] | None = None
) -> list[Violation]:
    return check_same_indices(first.observation, second.observation, flag, what, readings)


@DECLARED(
    Invariant(
        "stream_deterministic",
        "the same stream for the same seed and epoch",
        "unseeded shuffles, orders that depend on the process (webdataset #233)",
        f"{BAD}:UnseededShuffle",
        proven_under=STREAM,
        where=Where.BOTH,  # in groups for a dataset only they can judge (needs_process_group)
        judged_from=2,  # an order: one item cannot show it
        promised_by=(STREAM_ORDER,),
    )
)
def check_deterministic(first: StreamEpoch, second: StreamEpoch) -> list[Violation]:
    return check_same_stream(first, second, "stream_deterministic", "two datasets built alike and read alike differ")


@DECLARED(
    Invariant(
        "stream_agrees",
        "rank processes agree",
        "orders that depend on per-process state (str hash seeds, unseeded generators), so that "
        "ranks split different orders and overlap",
        f"{BAD}:HashSeeded",
        proven_under=STREAM,
        where=Where.GROUPS,
        judged_from=2,  # an order: one item cannot show it
        promised_by=(STREAM_ORDER,),
    )
)
def check_ranks_agree(epoch: StreamEpoch) -> list[Violation]:
    """Every rank's process built the same rank's dataset (``as_rank``): all read the same stream."""
    first = epoch.observation.indices[0]
    for rank, ids in enumerate(epoch.observation.indices[1:], start=1):
        if not np.array_equal(first, ids):
            where = first_difference(first, ids, readings=("rank 0's process", f"rank {rank}'s"))
            return [
                Violation(
                    "stream_agrees",
                    f"the same rank's dataset, built for the same case in two processes, yields {shorten(first)} in "
                    f"rank 0's process but {shorten(ids)} in rank {rank}'s ({where}): it depends on per-process "
                    f"state, so the ranks' parts of the data overlap and miss items",
                )
            ]
    return []


def _orders(readings: Sequence[StreamEpoch]) -> list[np.ndarray]:
    """Each reading's ids, all ranks concatenated in rank order."""
    return [np.concatenate(e.observation.indices or [np.empty(0, np.int64)]) for e in readings]


def _all_alike(orders: Sequence[np.ndarray]) -> bool:
    """Long enough to tell shuffles apart, and all in the first one's order."""
    return orders[0].size >= MIN_COMPARABLE_ITEMS and all(np.array_equal(orders[0], o) for o in orders[1:])


@DECLARED(
    Invariant(
        "stream_reshuffles",
        "a new order after set_epoch",
        "set_epoch ignored, so every epoch repeats the first one's order (webdataset #172)",
        f"{BAD}:EpochIgnored",
        proven_under=STREAM,
        needs=("shuffle",),
        judged_from=2,  # an order: one item cannot show it
        promised_by=(STREAM_ORDER,),
    )
)
def check_reshuffles(epochs: Sequence[StreamEpoch], without_workers: Sequence[StreamEpoch] = ()) -> list[Violation]:
    """RESHUFFLE_EPOCHS epochs of one dataset object, ``set_epoch`` called before each when it
    has one: not all in the first one's order. One repeat proves nothing: a shuffle of whole
    shards may have few orders to give (litdata's, of 5 chunks, gave the same one to epochs 0
    and 10, and 11 orders to epochs 0 to 11).

    ``without_workers``: the same epochs of a fresh dataset read by num_workers=0, which the
    tests read only when ``epochs``, read through workers, repeated. Where that reading changed
    order, the words say why the workers' did not: :data:`COPIED_AS_BUILT`."""
    orders = _orders(epochs)
    first = orders[0]
    if not _all_alike(orders):
        return []
    readers = f"read by {readers_said(epochs[0].case)}"
    if not epochs[0].has_set_epoch:
        how = f"the dataset has no set_epoch(), and {len(epochs)} epochs of it, {readers}, gave the same order"
    else:
        calls = ", ".join(f"set_epoch({e.case.epoch})" for e in epochs)
        how = f"{calls} gave the same order, {readers}"
    said = f"{how} on every rank, with shuffle=True: {shorten(first)} (ranks concatenated)"
    if without_workers and not _all_alike(_orders(without_workers)):
        said += f". {COPIED_AS_BUILT}"
    return [Violation("stream_reshuffles", said)]


# Why an order that changes from epoch to epoch without workers repeats through fresh ones.
COPIED_AS_BUILT = (
    "Read by num_workers=0, the same epochs changed order: the order moves on as the main process iterates the "
    "dataset (a generator made in __init__ and advanced in __iter__), and each fresh worker copies the dataset as "
    "it was built, never iterated, so through workers every epoch repeats the first"
)


@DECLARED(
    Invariant(
        "stream_seed_effective",
        "another seed, another order",
        "the seed never reaching the order, so that every run shuffles alike: accelerate's IterableDatasetShard "
        "reseeds its dataset's generator with the epoch alone (manual_seed(self.epoch))",
        f"{BAD}:SeedIgnored",
        proven_under=STREAM,
        where=Where.IN_PROCESS,
        needs=("seed", "shuffle"),
        judged_from=2,  # an order: one item cannot show it
        promised_by=(STREAM_ORDER,),
    )
)
def check_seed_effective(readings: Sequence[StreamEpoch]) -> list[Violation]:
    """The same epoch of datasets built with RESHUFFLE_EPOCHS seeds, shuffle=True: not all in
    one order (a shuffle of whole shards may give two seeds one order, as it may two epochs)."""
    orders = _orders(readings)
    if not _all_alike(orders):
        return []
    seeds = ", ".join(str(r.case.seed) for r in readings)
    return [
        Violation(
            "stream_seed_effective",
            f"seeds {seeds} gave the same order at epoch {readings[0].case.epoch} on every rank, with shuffle=True, "
            f"read by {readers_said(readings[0].case)}: {shorten(orders[0])} (ranks concatenated). The seed never "
            f"reaches the order, so every run of the job shuffles alike",
        )
    ]
