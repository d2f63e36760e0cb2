"""Known-bad data loaders: each is a loader that owns its sampling and batching with one bug a
pretraining loader can ship, named in its docstring.

Each is called as ``Attr(dataset_size, dp_rank=r, dp_world_size=W, global_batch_size=B,
seed=s)`` (and ``num_workers=n``, where it starts loader workers); ``selftests/test_loaders.py`` certifies each and asserts the exact set of failed
invariants its ``@rejected(...)`` declares. Most cut one global order into global batches
(:class:`_GlobalOrderLoader`, a conforming base, rank r taking the r-th contiguous slice of
each); the epoch-hook one is the reference (``adapters/torch_loader.py``) with its hook cut off.
The resumable ones keep olmo-core's bookkeeping (:class:`_ResumableLoader`, conforming to
``data_loader+elastic+resumable``), each with one bug in it.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch
from torch.utils.data import BatchSampler, DataLoader, IterableDataset, get_worker_info

from sampler_conformance.adapters.torch_loader import DistributedLoader

from .rejections import rejected

DATA_LOADER = "data_loader"
RESUMABLE = f"{DATA_LOADER}+resumable"
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


class _RankInstances(IterableDataset):
    """One rank's instances of an epoch, in the order its batches hold them, to every reader."""

    def __init__(self, instances: list[int]) -> None:
        self.instances = instances

    def __iter__(self) -> Iterator[int]:
        return iter(self.instances)  # no get_worker_info(): every worker reads them all


@rejected("test_loader_epoch", "loader_each_instance_once", under=DATA_LOADER)
class WorkersEachReadWholeShare(_GlobalOrderLoader):
    """Streams the rank's share through a DataLoader's workers without splitting it between
    them: each worker reads and batches the rank's whole share, so on 2 workers every instance
    is trained on twice (an IterableDataset that never asks ``get_worker_info()``,
    pytorch/pytorch #30599)."""

    def __init__(self, dataset_size, *, dp_rank, dp_world_size, global_batch_size, seed=0, num_workers=0) -> None:
        super().__init__(
            dataset_size, dp_rank=dp_rank, dp_world_size=dp_world_size, global_batch_size=global_batch_size, seed=seed
        )
        self.num_workers = num_workers

    def __iter__(self) -> Iterator[list[int]]:
        share = _RankInstances([i for batch in self.rank_batches() for i in batch])
        return iter(DataLoader(share, batch_size=self.per_rank, drop_last=True, num_workers=self.num_workers))


class _EpochBatches(_GlobalOrderLoader, IterableDataset):
    """The rank's batches of the epoch it was last told, each worker taking batches w, w +
    num_workers, ...: a DataLoader yields them back in order, a worker at a time."""

    def __iter__(self) -> Iterator[list[int]]:
        batches = self.rank_batches()
        worker = get_worker_info()
        return iter(batches if worker is None else batches[worker.id :: worker.num_workers])


@rejected(
    "test_loader_reshuffles",
    "loader_reshuffles",
    {"loader_deterministic": "a loader that read another epoch first reads that epoch's batches again"},
    under=DATA_LOADER,
)
class EpochReachesMainProcessOnly:
    """Keeps its epoch in the dataset and its DataLoader's workers persistent: ``reshuffle``
    sets the main process's copy, while the workers, started at the first epoch with a copy of
    their own, read that epoch's order every epoch after (huggingface/datasets #6673). Right
    without workers, and for a fresh loader's first epoch."""

    def __init__(self, dataset_size, *, dp_rank, dp_world_size, global_batch_size, seed=0, num_workers=0) -> None:
        self.dataset = _EpochBatches(
            dataset_size, dp_rank=dp_rank, dp_world_size=dp_world_size, global_batch_size=global_batch_size, seed=seed
        )
        self.loader = DataLoader(
            self.dataset, batch_size=None, num_workers=num_workers, persistent_workers=num_workers > 0
        )

    def reshuffle(self, epoch: int) -> None:
        self.dataset.reshuffle(epoch)

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self.loader)


class _ResumableLoader(_GlobalOrderLoader):
    """A conforming resumable loader, with olmo-core's bookkeeping in instances (ai2-olmo-core
    3.0.0, olmo_core/data/data_loader.py: ``TextDataLoaderBase.__iter__`` adds the global batch
    size to ``tokens_processed`` for every batch a rank yields, line 313;
    ``NumpyDataLoaderBase.state_dict`` stores it with the epoch, 441-449;
    ``NumpyFSLDataLoader.load_state_dict`` resumes at ``tokens_processed // global_batch_size``
    global batches, 760): its state is the epoch and the global instances processed in it,
    which a resume turns back into global batches to skip. Cleared when a pass ends."""

    def __init__(self, dataset_size, *, dp_rank, dp_world_size, global_batch_size, seed=0) -> None:
        super().__init__(
            dataset_size, dp_rank=dp_rank, dp_world_size=dp_world_size, global_batch_size=global_batch_size, seed=seed
        )
        self.instances_processed = 0

    def counted(self) -> int | np.integer:
        """What one batch this rank yields adds to the state."""
        return self.global_batch_size

    def batches_to_skip(self) -> int:
        return self.instances_processed // self.global_batch_size

    def __iter__(self) -> Iterator[list[int]]:
        for batch in self.rank_batches()[self.batches_to_skip() :]:
            self.instances_processed += self.counted()
            yield batch
        self.instances_processed = 0

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "instances_processed": self.instances_processed}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.epoch = state["epoch"]
        self.instances_processed = state["instances_processed"]


@rejected("test_loader_resume_continues", "loader_resume_continues", under=RESUMABLE)
class CountsRankInstancesAsGlobal(_ResumableLoader):
    """Counts the instances of this rank's batches where olmo-core counts the global batch's
    (``tokens_processed += global_batch_size`` in ``TextDataLoaderBase.__iter__``), and resumes
    at that count over the global batch size, as ``NumpyFSLDataLoader.load_state_dict`` does: on
    W ranks, a resume after k global batches starts at global batch k // W, and the batches
    between are trained twice."""

    def counted(self) -> int:
        return self.per_rank


@rejected("test_loader_resume_continues", "loader_resume_continues", under=RESUMABLE)
class StateForgetsEpoch(_ResumableLoader):
    """A state without the epoch: ``load_state_dict`` restores the epoch the state holds, none,
    so epoch 0, over the one the epoch hook set before it (olmo-core restores ``epoch`` from its
    state; torchdata's StatefulDistributedSampler kept none until meta-pytorch/data #1515): the
    resumed epoch skips k batches of epoch 0's order."""

    def state_dict(self) -> dict[str, int]:
        return {"instances_processed": self.instances_processed}

    def load_state_dict(self, state: dict[str, int]) -> None:
        super().load_state_dict({"epoch": 0, **state})


@rejected("test_loader_epoch_after_resume", "loader_epoch_after_resume", under=RESUMABLE)
class SkipOutlivesEpoch(_ResumableLoader):
    """Keeps the loaded count as the start of every pass, not only the resumed one: each epoch
    after a resume skips its first k batches too (the offset re-applied every epoch,
    NVIDIA-NeMo/Megatron-Bridge #4565)."""

    loaded = 0

    def load_state_dict(self, state: dict[str, int]) -> None:
        super().load_state_dict(state)
        self.loaded = self.instances_processed

    def batches_to_skip(self) -> int:
        return max(self.instances_processed, self.loaded) // self.global_batch_size


@rejected("test_loader_plain_state", "loader_plain_state", under=RESUMABLE)
class CountsInNumpy(_ResumableLoader):
    """Counts the instances processed as numpy does arithmetic, ``np.prod(batch.shape)`` (a
    token count from a numpy batch's shape, say): the count is a ``numpy.int64``, which
    ``torch.save`` pickles as a numpy scalar and ``torch.load(weights_only=True)``, torch's
    default since 2.6, refuses. The trainer saves its checkpoint and cannot load it."""

    def counted(self) -> np.integer:
        return np.prod(np.array([self.global_batch_size]))


@rejected(
    "test_loader_resume_on_other_dp_size", "loader_resume_on_other_dp_size", under=f"{DATA_LOADER}+elastic+resumable"
)
class StateCountsRankInstances(_ResumableLoader):
    """Counts this rank's instances and resumes at that count over its own batch size, as
    torchdata's StatefulDistributedSampler counts the items its rank yielded: right on the same
    number of ranks, but rank 0's state at DP size W1 loaded at W2 skips k * W2 / W1 batches
    where k global batches were read."""

    def counted(self) -> int:
        return self.per_rank

    def batches_to_skip(self) -> int:
        return self.instances_processed // self.per_rank


class _Counted:
    """A batch sampler that counts, in ``loader.global_batches_read``, each batch as it is sampled."""

    def __init__(self, batches: BatchSampler, loader: DistributedLoader) -> None:
        self.batches = batches
        self.loader = loader

    def __iter__(self) -> Iterator[list[int]]:
        for batch in self.batches:
            self.loader.global_batches_read += 1
            yield batch


@rejected("test_loader_resume_continues", "loader_resume_continues", under=RESUMABLE)
class CountsBatchesAsSampled(DistributedLoader):
    """The reference, its count of the epoch's batches kept where the DataLoader asks its batch
    sampler for the next batch, not where a batch reaches the training loop. Without workers the
    two are one step; through workers the DataLoader samples ``prefetch_factor x num_workers``
    batches ahead of those it has handed over, so a checkpoint after k batches counts up to 2 x
    num_workers more, and the resume skips them (why torchdata's ``StatefulDataLoader`` keeps
    the state of the batches handed over, not of its sampler). It fails only where workers are
    drawn."""

    def __iter__(self) -> Iterator[torch.Tensor]:
        rest = list(self.sampler)[self.global_batches_read * self.rank_batch_size :]
        batches = _Counted(BatchSampler(rest, self.rank_batch_size, drop_last=True), self)
        yield from DataLoader(self.dataset, batch_sampler=batches, num_workers=self.num_workers)
        self.global_batches_read = 0
