"""IterableDatasets written with torch alone, as the PyTorch docs teach: ``get_worker_info()``
tells each DataLoader worker which part of the stream to read.

    sampler_conformance.adapters.torch_iterable:make          contract stream   (the default of the stream contracts)
    sampler_conformance.adapters.torch_iterable:docs_example  contract stream   (the docs' example as written)

``docs_example`` is the first example of ``torch.utils.data.IterableDataset``'s docstring,
verbatim: it splits the range among the workers of one process and knows nothing of ranks.
``make`` is the same idea carried to a job of several ranks, as a reference: the stream is
cut into ``world_size x num_workers`` parts of sizes differing by at most one, shuffled
with ``seed + epoch`` when asked; the epoch lives in shared memory, so that ``set_epoch``
reaches persistent workers (what huggingface/datasets #6710 did for #6673).
"""

from __future__ import annotations

import math

import torch
from torch.utils.data import IterableDataset, get_worker_info


class MyIterableDataset(IterableDataset):
    """torch/utils/data/dataset.py, the IterableDataset docstring's first example (torch 2.13.0)."""

    def __init__(self, start, end):
        super(MyIterableDataset).__init__()  # type: ignore[misc]  # verbatim: the docs' one-argument super()
        assert end > start, "this example only works with end >= start"
        self.start = start
        self.end = end

    def __iter__(self):
        worker_info = torch.utils.data.get_worker_info()
        if worker_info is None:  # single-process data loading, return the full iterator
            iter_start = self.start
            iter_end = self.end
        else:  # in a worker process
            # split workload
            per_worker = int(math.ceil((self.end - self.start) / float(worker_info.num_workers)))
            worker_id = worker_info.id
            iter_start = self.start + worker_id * per_worker
            iter_end = min(iter_start + per_worker, self.end)
        return iter(range(iter_start, iter_end))


def docs_example(dataset_size: int, *, rank: int, world_size: int) -> MyIterableDataset:
    """The docs' example over the ids 0 .. N-1, on every rank alike (it takes no rank)."""
    return MyIterableDataset(0, dataset_size)


class RankWorkerSplit(IterableDataset):
    """The ids 0 .. N-1 (shuffled with seed + epoch when asked), cut into one part per
    (rank, worker) pair, of sizes differing by at most one."""

    def __init__(self, dataset_size: int, rank: int, world_size: int, seed: int = 0, shuffle: bool = False) -> None:
        self.dataset_size = dataset_size
        self.rank = rank
        self.world_size = world_size
        self.seed = seed
        self.shuffle = shuffle
        self._epoch = torch.zeros(1, dtype=torch.int64).share_memory_()  # shared with persistent workers

    def set_epoch(self, epoch: int) -> None:
        self._epoch[0] = epoch

    @property
    def epoch(self) -> int:
        return int(self._epoch[0])

    def order(self) -> list[int]:
        """The epoch's order of the whole dataset, the same in every rank and worker."""
        if not self.shuffle:
            return list(range(self.dataset_size))
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        return torch.randperm(self.dataset_size, generator=generator).tolist()

    def part(self) -> tuple[int, int]:
        """(this reader's part, the number of parts): one per (rank, worker) pair."""
        info = get_worker_info()
        workers, worker = (1, 0) if info is None else (info.num_workers, info.id)
        return self.rank * workers + worker, self.world_size * workers

    def __iter__(self):
        order = self.order()
        part, parts = self.part()
        base, extra = divmod(len(order), parts)
        start = part * base + min(part, extra)
        return iter(order[start : start + base + (part < extra)])


def make(dataset_size: int, *, rank: int, world_size: int, seed: int = 0, shuffle: bool = False) -> RankWorkerSplit:
    return RankWorkerSplit(dataset_size, rank, world_size, seed, shuffle)
