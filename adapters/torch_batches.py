"""The rank_batches contract's reference: each rank batches its own DistributedSampler share.

    sampler_conformance.adapters.torch_batches:per_rank   contract rank_batches   (the reference)

What ``DataLoader(dataset, batch_size=B, sampler=DistributedSampler(dataset, ...))`` reads on
rank r, as one batch sampler: torch's ``BatchSampler`` over torch's ``DistributedSampler``,
both given ``drop_last``. The loader's training loop calls ``set_epoch`` on the
DistributedSampler; here the batch sampler passes it on.
"""

from __future__ import annotations

from typing import Any

from torch.utils.data import BatchSampler, DistributedSampler


class PerRankBatches(BatchSampler):
    def __init__(self, sampler: DistributedSampler[int], batch_size: int, drop_last: bool) -> None:
        super().__init__(sampler, batch_size, drop_last)
        self.shares = sampler

    def set_epoch(self, epoch: int) -> None:
        self.shares.set_epoch(epoch)


def per_rank(
    dataset: Any,
    num_replicas: int | None = None,
    rank: int | None = None,
    shuffle: bool = True,
    seed: int = 0,
    drop_last: bool = False,
    batch_size: int = 1,
) -> PerRankBatches:
    shares: DistributedSampler[int] = DistributedSampler(
        dataset, num_replicas, rank, shuffle=shuffle, seed=seed, drop_last=drop_last
    )
    return PerRankBatches(shares, batch_size, drop_last)
