"""The numeric edge a streaming dataset is judged at under ``--scale``: 2^24 + 1 ids.

Past 2^24 float32 holds only even integers, so an id, a shard's bounds or a rank's share
computed through a float32 tensor (``torch.linspace`` and ``torch.arange`` over floats make
them by default) rounds to a neighbour, and an item is read twice or never. The case reads
every rank whole, so every invariant of one epoch is judged as at N <= 400: two ranks, a
shard each, no loader workers (each worker's copy would hold the order again), batches of
4,096 items. It is read only where the cost measured before the draws projects reading
2^24 + 1 items within the budget (``harness.execution.cost.unaffordable``): a stream that
writes its shards to files may not be, and says so.
"""

from __future__ import annotations

from .case import StreamCase, one_shard_per_rank
from .contracts import StreamContract

EDGE_SIZES = (2**24 + 1,)
EDGE_WORLD = 2
EDGE_BATCH = 4096  # items a batch: reading 2^24 items costs their ids' conversion, not a batch's overhead
SAID = f"{EDGE_SIZES[0]:,} ids on W = {EDGE_WORLD} (past float32's exact integers); --scale judges them"


def edge_case(size: int, contract: StreamContract) -> StreamCase:
    """``size`` ids, shuffled with seed 0, at epoch 1, a shard per rank, read without workers."""
    return one_shard_per_rank(
        size, EDGE_WORLD, mixes=contract.mixes, seed=0, epoch=1, shuffle=True, batch_size=EDGE_BATCH
    )
