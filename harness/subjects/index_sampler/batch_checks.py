"""The per-epoch invariants of where a batch sampler's batches come from: whole batches of
the one-rank sequence, rank r's k-th being its batch k*W + r (``whole_batches``), or each
rank's own share of the one-rank order cut into batches (``per_rank_batches``,
``per_rank_contiguous_batches``). Each is declared on its check in the per-epoch table
(``checks.PER_EPOCH``).
"""

from __future__ import annotations

import numpy as np

from sampler_conformance.core.case import Observation
from sampler_conformance.core.evidence import Violation, shorten
from sampler_conformance.core.invariants import Invariant

from .case import IndexCase
from .checks import FAMILIES, PER_EPOCH, required
from .contracts import (
    CONTIGUOUS_SHARES,
    PER_RANK_BATCHES,
    PER_RANK_CONTIGUOUS_BATCHES,
    STRIDED_SHARES,
    WHOLE_BATCHES,
    SamplerContract,
)


@PER_EPOCH.declare(
    Invariant(
        "whole_batches",
        "batches whole on one rank",
        "batches split across ranks",
        f"{FAMILIES}:SplitBatches",
        proven_under="batch",
        promised_by=(WHOLE_BATCHES,),
    ),
    against_one_rank=True,
)
def check_whole_batches(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """Rank r's k-th batch is batch k*W + r of the one-rank batch sequence (padding rounds aside)."""
    single_rank = required(one_rank)
    assert obs.batches is not None and single_rank.batches is not None
    reference = single_rank.batches[0]
    world = obs.case.world_size
    for rank, batches in enumerate(obs.batches):
        for k, batch in enumerate(batches):
            position = k * world + rank
            if position < len(reference) and not np.array_equal(batch, reference[position]):
                said = (
                    f"rank {rank}'s batch {k} should be batch {position} of the one-rank sequence, "
                    f"{shorten(reference[position])}, got {shorten(batch)}"
                )
                if world > 1 and obs.case.batch_size > 1 and not share_batches_mismatch(obs, single_rank.indices[0]):
                    said += ": " + STRIDED_SHARES_BATCHED.format(w=world, b=obs.case.batch_size, w2=2 * world)
                return [Violation("whole_batches", said)]
    return []


# What a sampler that batches its own strided share does, against what the batch contract promises.
STRIDED_SHARES_BATCHED = (
    "each rank cuts its batches from its own strided share of one order Q (rank r's batches are Q[r::{w}] cut "
    "into batches of {b}), the layout of DataLoader(batch_size={b}, sampler=DistributedSampler(...)); the batch "
    "contract promises accelerate's, where rank r gets whole batches r, r+{w}, r+{w2}, ... of the one-rank "
    "sequence; --contract=rank_batches promises this layout"
)


def share_batches_mismatch(obs: Observation[IndexCase], order: np.ndarray, layout: str = STRIDED_SHARES) -> str:
    """Where the ranks' batches are not each rank's share of the one-rank order Q
    (``order``), cut into batches of batch_size but for the last. The share is strided
    (Q[r::W], Q padded from its head to a multiple of W, as DistributedSampler pads it; with
    drop_last, that share less fewer than a batch and one item) or a contiguous block (the
    r-th of W blocks of ceil(N/W) items of Q so padded; with drop_last, of N // W items of Q,
    less fewer than a batch). Where Q itself lost its tail to a dropped last batch, what the
    share holds there is not known, and any item matches. Empty when they are."""
    assert obs.batches is not None
    world, size, n = obs.case.world_size, obs.case.batch_size, obs.case.dataset_size
    if not n or not order.size:
        return "" if not any(obs.batches) else f"the dataset is empty, but the ranks yield {list(obs.lengths)} items"
    if order.size > n:
        return f"the one-rank order holds {order.size} items for N={n}"
    contiguous, drop_last = layout == CONTIGUOUS_SHARES, obs.case.drop_last
    per_rank = n // world if contiguous and drop_last else -(-n // world)
    source = np.arange(per_rank * world)
    source = np.where(source < n, source, (source - n) % n)  # the padding repeats Q from its head
    known = source < order.size
    padded = np.where(known, order[np.minimum(source, order.size - 1)], -1)
    for rank, batches in enumerate(obs.batches):
        where = slice(rank * per_rank, (rank + 1) * per_rank) if contiguous else slice(rank, None, world)
        share, items, unknown = padded[where], obs.indices[rank], ~known[where]
        named = f"contiguous share Q[{where.start}:{where.stop}]" if contiguous else f"strided share Q[{rank}::{world}]"
        dropped = size - 1 + (n % world != 0 and not contiguous) if drop_last else 0
        if not max(share.size - dropped, 0) <= items.size <= share.size:
            return (
                f"rank {rank} yields {items.size} items; its {named} of Q, padded from its head, holds {share.size}"
                + (", less fewer than a batch with drop_last" if drop_last else "")
            )
        head = share[: items.size]
        wrong = np.flatnonzero(np.where(unknown[: items.size], items, head) != items)
        if wrong.size:
            k = int(wrong[0])
            return (
                f"rank {rank}'s item {k} should be item {k} of its {named} = {shorten(share)}, got "
                f"{int(items[k])}; its batches, one after another: {shorten(items)}"
            )
        lengths = [len(batch) for batch in batches]
        if any(length != size for length in lengths[:-1]) or (lengths and not 0 < lengths[-1] <= size):
            return f"rank {rank}'s batches hold {lengths} items: batch_size={size} each, the last one 1 to {size}"
    return ""


@PER_EPOCH.declare(
    Invariant(
        "share_batched",
        "batches cut from the rank's own share",
        "batches formed across ranks where each rank batches its own share (DataLoader(batch_size=B, "
        "sampler=DistributedSampler(...))), or shares batched out of order",
        f"{FAMILIES}:ContiguousSharesBatched",
        proven_under="rank_batches",
        promised_by=(PER_RANK_BATCHES, PER_RANK_CONTIGUOUS_BATCHES),
    ),
    against_one_rank=True,
)
def check_share_batched(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """Rank r's batches, in order, are its share of the one-rank order (strided or contiguous,
    as the contract's layout says) cut into batch_size."""
    single_rank = required(one_rank)
    mismatch = share_batches_mismatch(obs, single_rank.indices[0], contract.layout)
    return [Violation("share_batched", mismatch)] if mismatch else []
