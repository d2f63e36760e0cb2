"""The data loader contract's reference, built on torch alone.

    sampler_conformance.adapters.torch_loader:make   contract data_loader+elastic+resumable   (the reference)

Rank r of W reads ``DataLoader(dataset, batch_size=B // W, sampler=DistributedSampler(dataset,
num_replicas=W, rank=r, shuffle=True, seed=seed, drop_last=True), drop_last=True)``, B the
global batch size (after a resume, over the rest of the sampler's order); its epoch hook,
``set_epoch(epoch)``, reaches the DistributedSampler. Each
batch is a 1-D tensor of the instance ids (the dataset's item i is i).

It keeps the world-size promise (``+elastic``): the DistributedSampler's order P is
``randperm(N)`` from ``seed + epoch``, whatever W, and rank r yields ``P[r::W]``. Its batch g is
``P[r::W][g*b:(g+1)*b]`` (b = B / W), the positions of ``[g*B, (g+1)*B)`` that are r mod W, so
global batch g, every rank's batch g together, is ``P[g*B:(g+1)*B]`` at any W. Both
``drop_last`` are needed: the sampler's cuts each rank to ``N // W`` instances, the loader's to
``N // B`` whole batches, the same on every rank; the incomplete final global batch is left
out. Without the loader's, every rank would read a short last batch whose instances depend on W.

It resumes by batch count (``+resumable``): its state is the epoch and the global batches read
in it, which are this rank's batches read, one per global batch. A resume after k of them
starts the rank's share at ``k * b``, the positions of ``[0, k*B)`` that are r mod W: so the
state is global, and a state taken at one DP size resumes at another. The count is cleared
when a pass ends, so the next epoch is whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from torch.utils.data import DataLoader, DistributedSampler

from sampler_conformance.subjects.common.index_dataset import IndexDataset


class DistributedLoader:
    """One rank's loader: its part of each global batch of ``global_batch_size`` instances."""

    def __init__(
        self,
        dataset_size: int,
        *,
        dp_rank: int,
        dp_world_size: int,
        global_batch_size: int,
        seed: int = 0,
        num_workers: int = 0,
    ) -> None:
        if global_batch_size % dp_world_size:
            raise ValueError(
                f"global_batch_size={global_batch_size} is not a multiple of dp_world_size={dp_world_size}"
            )
        self.dataset = IndexDataset(dataset_size)
        self.sampler: DistributedSampler[int] = DistributedSampler(
            self.dataset, num_replicas=dp_world_size, rank=dp_rank, shuffle=True, seed=seed, drop_last=True
        )
        self.rank_batch_size = global_batch_size // dp_world_size
        self.num_workers = num_workers
        self.global_batches_read = 0  # in the current epoch

    def set_epoch(self, epoch: int) -> None:
        self.sampler.set_epoch(epoch)

    def __iter__(self) -> Iterator[Any]:
        rest = list(self.sampler)[self.global_batches_read * self.rank_batch_size :]
        loader = DataLoader(
            self.dataset, batch_size=self.rank_batch_size, sampler=rest, drop_last=True, num_workers=self.num_workers
        )
        for batch in loader:
            self.global_batches_read += 1  # before the batch is handed over: a state taken then counts it
            yield batch
        self.global_batches_read = 0

    def __len__(self) -> int:
        return len(self.sampler) // self.rank_batch_size

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.sampler.epoch, "global_batches_read": self.global_batches_read}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.sampler.set_epoch(state["epoch"])
        self.global_batches_read = state["global_batches_read"]


def make(
    dataset_size: int, *, dp_rank: int, dp_world_size: int, global_batch_size: int, seed: int = 0, num_workers: int = 0
) -> DistributedLoader:
    return DistributedLoader(
        dataset_size,
        dp_rank=dp_rank,
        dp_world_size=dp_world_size,
        global_batch_size=global_batch_size,
        seed=seed,
        num_workers=num_workers,
    )
