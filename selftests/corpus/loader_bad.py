"""Known-bad data loaders: each is a loader that owns its sampling and batching with one bug a
pretraining loader can ship, named in its docstring.

Each is called as ``Attr(dataset_size, dp_rank=r, dp_world_size=W, global_batch_size=B,
seed=s)``; ``selftests/test_loaders.py`` certifies each and asserts the exact set of failed
invariants its ``@rejected(...)`` declares. Most cut one global order into global batches
(:class:`_GlobalOrderLoader`, a conforming base, rank r taking the r-th contiguous slice of
each); the epoch-hook one is the reference (``adapters/torch_loader.py``) with its hook cut off.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from sampler_conformance.adapters.torch_loader import DistributedLoader

from .rejections import rejected

DATA_LOADER = "data_loader"
# The tokens of one instance, for a loader that yields token offsets for ids.
SEQUENCE_LENGTH = 4


class _GlobalOrderLoader:
    """A conforming loader, the base of most known-bads: one global order from ``seed + epoch``
    alone, cut into whole global batches of ``global_batch_size`` (an incomplete final one
    left out), rank r taking the r-th slice of ``global_batch_size // dp_world_size`` of each."""

    def __init__(self, dataset_size, *, dp_rank, dp_world_size, global_batch_size, seed=0) -> None:
        self.size = dataset_size
        self.rank = dp_rank
        self.world_size = dp_world_size
        self.global_batch_size = global_batch_size
        self.per_rank = global_batch_size // dp_world_size
        self.seed = seed
        self.epoch = 0

    def reshuffle(self, epoch: int) -> None:
        self.epoch = epoch

    def order(self) -> list[int]:
        return torch.randperm(self.size, generator=torch.Generator().manual_seed(self.seed + self.epoch)).tolist()

    def global_batches(self, order: list[int]) -> list[list[int]]:
        whole = len(order) // self.global_batch_size * self.global_batch_size
        return [order[start : start + self.global_batch_size] for start in range(0, whole, self.global_batch_size)]

    def rank_batches(self) -> list[list[int]]:
        part = slice(self.rank * self.per_rank, (self.rank + 1) * self.per_rank)
        return [batch[part] for batch in self.global_batches(self.order())]

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self.rank_batches())


@rejected("test_loader_runs", "loader_runs", crashes=True, under=DATA_LOADER)
class RefusesShortEpoch(_GlobalOrderLoader):
    """Raises when the dataset holds fewer instances than one global batch, instead of reading
    an epoch of no batches."""

    def __iter__(self) -> Iterator[list[int]]:
        if self.size < self.global_batch_size:
            raise ValueError(f"{self.size} instances do not fill a global batch of {self.global_batch_size}")
        return super().__iter__()


@rejected(
    "test_loader_epoch",
    "loader_batch_ids",
    {"loader_each_instance_once": "the instances past N / SEQUENCE_LENGTH are never named by an id in range(N)"},
    under=DATA_LOADER,
)
class TokenOffsetsAsIds(_GlobalOrderLoader):
    """Yields each instance's offset in the token file (id times the sequence length) where the
    batch should carry the instance's id."""

    def __iter__(self) -> Iterator[list[int]]:
        return iter([[i * SEQUENCE_LENGTH for i in batch] for batch in self.rank_batches()])


@rejected("test_loader_epoch", "loader_each_instance_once", under=DATA_LOADER)
class PadsLastGlobalBatch(_GlobalOrderLoader):
    """Completes the incomplete final global batch with instances from the epoch's start, as
    DistributedSampler's ``drop_last=False`` pads a rank's share: those are trained on twice."""

    def global_batches(self, order: list[int]) -> list[list[int]]:
        short = -len(order) % self.global_batch_size
        padded = order + [order[i % len(order)] for i in range(short)] if order else order
        return super().global_batches(padded)


@rejected("test_loader_epoch", "loader_rank_batch_size", under=DATA_LOADER)
class KeepsIncompleteGlobalBatch(_GlobalOrderLoader):
    """Keeps the incomplete final global batch, split as evenly as it goes across the ranks:
    every rank's last batch is short, or empty."""

    def rank_batches(self) -> list[list[int]]:
        order = self.order()
        tail = order[len(order) // self.global_batch_size * self.global_batch_size :]
        if not tail:
            return super().rank_batches()
        shares = [part.tolist() for part in torch.tensor(tail).tensor_split(self.world_size)]
        return [*super().rank_batches(), shares[self.rank]]


@rejected("test_loader_epoch", "loader_equal_batch_counts", under=DATA_LOADER)
class LastGlobalBatchToSomeRanks(_GlobalOrderLoader):
    """Gives the instances of the incomplete final global batch to the ranks they fill a whole
    batch for, and nothing to the others: those ranks read one step more."""

    def rank_batches(self) -> list[list[int]]:
        order = self.order()
        tail = order[len(order) // self.global_batch_size * self.global_batch_size :]
        mine = tail[self.rank * self.per_rank : (self.rank + 1) * self.per_rank]
        extra = [mine] if len(mine) == self.per_rank else []
        return [*super().rank_batches(), *extra]


@rejected("test_loader_deterministic", "loader_deterministic", under=DATA_LOADER)
class GeneratorCarriedOver(_GlobalOrderLoader):
    """Seeds one generator at construction and draws each epoch's order from it as the epoch
    hook is called, whatever the epoch: a loader that read another epoch first reads other
    batches than a fresh one at the same epoch (a resumed run, the script run again)."""

    def __init__(self, dataset_size, *, dp_rank, dp_world_size, global_batch_size, seed=0) -> None:
        super().__init__(
            dataset_size, dp_rank=dp_rank, dp_world_size=dp_world_size, global_batch_size=global_batch_size, seed=seed
        )
        self.generator = torch.Generator().manual_seed(self.seed)
        self.drawn = torch.randperm(self.size, generator=self.generator).tolist()

    def reshuffle(self, epoch: int) -> None:
        self.drawn = torch.randperm(self.size, generator=self.generator).tolist()

    def order(self) -> list[int]:
        return self.drawn


@rejected("test_loader_reshuffles", "loader_reshuffles", under=DATA_LOADER)
class EpochHookIgnored(DistributedLoader):
    """The reference with an epoch hook that does nothing (a wrapper that does not pass
    ``set_epoch`` on to its sampler, Lightning #21454): the same batches every epoch."""

    def set_epoch(self, epoch: int) -> None:
        pass


@rejected(
    "test_loader_reshuffles",
    "loader_reshuffles",
    {"loader_deterministic": "a loader that read another epoch first reads its epoch empty, a fresh one whole"},
    under=DATA_LOADER,
)
class ServesOneEpoch(_GlobalOrderLoader):
    """Makes its stream of batches on the first pass and never starts it again: every later
    epoch is empty (torchtitan's text dataset with ``infinite=False`` keeps its read position
    at the end of the data)."""

    def __init__(self, dataset_size, *, dp_rank, dp_world_size, global_batch_size, seed=0) -> None:
        super().__init__(
            dataset_size, dp_rank=dp_rank, dp_world_size=dp_world_size, global_batch_size=global_batch_size, seed=seed
        )
        self.stream: Iterator[list[int]] | None = None

    def __iter__(self) -> Iterator[list[int]]:
        if self.stream is None:
            self.stream = super().__iter__()
        return self.stream


@rejected("test_same_global_batches_at_every_dp_size", "loader_same_global_batches", under=f"{DATA_LOADER}+elastic")
class PerRankShuffle(_GlobalOrderLoader):
    """Shards first, then shuffles: rank r takes the instances r, r + W, ... of the whole
    global batches and shuffles them with a generator of its own, so global batch g holds
    other instances at every DP size: a run resumed on another number of ranks trains on
    other batches."""

    def rank_batches(self) -> list[list[int]]:
        whole = self.size // self.global_batch_size * self.global_batch_size
        share = range(self.rank, whole, self.world_size)
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        shuffled = [share[i] for i in torch.randperm(len(share), generator=generator).tolist()]
        return [shuffled[start : start + self.per_rank] for start in range(0, len(shuffled), self.per_rank)]
