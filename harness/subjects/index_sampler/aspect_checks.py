"""The per-epoch invariants of an aspect-ratio batch sampler (``aspect_grouped``): batches of
one aspect bucket but the rank's tail, and the rank's batches its padded share. Each is
declared on its check in the per-epoch table (``checks.PER_EPOCH``).
"""

from __future__ import annotations

import numpy as np

from sampler_conformance.core.case import Observation
from sampler_conformance.core.counting import index_counts
from sampler_conformance.core.evidence import Violation, shorten
from sampler_conformance.core.invariants import Invariant

from .case import IndexCase
from .checks import FAMILIES, PER_EPOCH
from .contracts import ASPECT_GROUPED, SamplerContract


def _batch_portraits(items: np.ndarray, sizes: list[int], aspects: np.ndarray) -> np.ndarray:
    """How many portrait items (aspect bucket 0) each batch of a rank holds, out-of-range
    indices left out (valid_indices charges them)."""
    of_batch = np.repeat(np.arange(len(sizes)), sizes)
    valid = (items >= 0) & (items < aspects.size)
    return np.bincount(of_batch[valid], weights=aspects[items[valid]] == 0, minlength=len(sizes)).astype(np.int64)


@PER_EPOCH.declare(
    Invariant(
        "aspect_grouped",
        "batches of one aspect bucket but the rank's tail",
        "portrait and landscape images batched together before the tail: each batch padded to the largest "
        "height and the largest width, the memory AspectRatioBatchSampler exists to save (a bucket looked up by "
        "the item's position in the rank's share, not by its index), or a tail batch over B",
        f"{FAMILIES}:BucketOfPosition",
        proven_under="aspect_ratio",
        promised_by=(ASPECT_GROUPED,),
    )
)
def check_aspect_grouped(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """Every batch of a rank holds B items of one aspect bucket, but its tail, its last two
    batches: the buckets' leftovers (each fewer than B) cut into batches of B, so at most
    one of them mixes the buckets, and only the last is short."""
    assert obs.batches is not None
    aspects, size = obs.case.aspects(), obs.case.batch_size
    for rank, batches in enumerate(obs.batches):
        if not batches:
            continue
        sizes = [len(batch) for batch in batches]
        portraits = _batch_portraits(obs.indices[rank], sizes, aspects)
        mixed = np.flatnonzero((portraits > 0) & (portraits < np.array(sizes)))
        last = len(batches) - 1
        short = [k for k in range(last) if sizes[k] < size]
        if max(sizes) > size:
            k = int(np.argmax(sizes))
            wrong = f"batch {k} holds {sizes[k]} items, more than batch_size={size}"
        elif short:
            k = short[0]
            wrong = f"batch {k} of {last + 1} holds {sizes[k]} items: only the last may be short of batch_size={size}"
        elif mixed.size and mixed[0] < last - 1:
            k = int(mixed[0])
            wrong = (
                f"batch {k} of {last + 1} mixes {int(portraits[k])} portrait and {sizes[k] - int(portraits[k])} "
                f"landscape items, before the rank's tail (its last two batches)"
            )
        elif mixed.size > 1:
            k = int(mixed[1])
            wrong = f"batches {int(mixed[0])} and {k} of {last + 1} both mix the buckets"
        else:
            continue
        return [
            Violation(
                "aspect_grouped",
                f"rank {rank}'s {wrong}, {shorten(batches[k])}: every batch holds batch_size items of one "
                f"aspect bucket (width < height or not) but the buckets' leftovers, each fewer than "
                f"batch_size, cut into the rank's last two batches, of which at most one mixes them",
            )
        ]
    return []


@PER_EPOCH.declare(
    Invariant(
        "aspect_share",
        "the rank's batches are its padded share",
        "items dropped beyond one short batch, so ranks run different numbers of steps and DDP hangs: each "
        "bucket's leftovers dropped apart under drop_last (mmdet #11114, MultiDataAspectRatioBatchSampler), or a "
        "leftover batch of exactly B dropped (mmdet's AspectRatioBatchSampler)",
        f"{FAMILIES}:DropsEachBucketsTail",
        proven_under="aspect_ratio",
        promised_by=(ASPECT_GROUPED,),
    )
)
def check_aspect_share(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """Each rank's batches together hold its strided share of the order padded from its head,
    ceil(N/W) items (with drop_last, less the fewer than B that fill no batch: a whole number
    of batches, ceil(N/W) // B of them); the ranks together repeat no index beyond the padding."""
    case = obs.case
    # The share is always padded (mmengine's DefaultSampler, round_up=True): drop_last cuts batches, not the share.
    share = contract.expected_length(case.dataset_size, case.world_size, drop_last=False)
    expected = share - share % case.batch_size if case.drop_last else share
    wrong = {rank: items.size for rank, items in enumerate(obs.indices) if items.size != expected}
    if wrong:
        got = ", ".join(f"rank {rank}: {n}" for rank, n in list(wrong.items())[:8])
        rule = (
            f"ceil(N/W)={share} less its remainder by batch_size={case.batch_size}"
            if case.drop_last
            else (f"ceil(N/W)={share}")
        )
        return [
            Violation(
                "aspect_share",
                f"each rank's batches should hold its padded share, {expected} items ({rule}), got {got}",
            )
        ]
    counts = index_counts([obs], case.dataset_size)
    padding = contract.padding_size(case.dataset_size, case.world_size, drop_last=False)
    surplus = int(counts.sum()) - int(np.count_nonzero(counts))
    if surplus <= padding:
        return []
    return [
        Violation(
            "aspect_share",
            f"the ranks together repeat {surplus} items, beyond the {padding} of padding to W x ceil(N/W); "
            f"repeated indices: {shorten(np.flatnonzero(counts > 1))}",
        )
    ]
