"""The reference of contract ``truncated``: torch's DistributedSampler with ``drop_last=True``,
always.

A sampler that drops the global order's tail by design (no ``drop_last`` parameter, or one
it ignores) breaks the ``torch`` contract on purpose, which pads; ``--contract=truncated``
certifies it as what it is: floor(N/W) indices per rank, strided, the ranks disjoint.
"""

from __future__ import annotations

from typing import Any

from torch.utils.data import DistributedSampler


def always_drops_tail(
    dataset: Any, num_replicas: int | None = None, rank: int | None = None, shuffle: bool = True, seed: int = 0
) -> DistributedSampler:
    return DistributedSampler(dataset, num_replicas, rank, shuffle=shuffle, seed=seed, drop_last=True)
