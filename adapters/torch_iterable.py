"""IterableDatasets written with torch alone, as the PyTorch docs teach: ``get_worker_info()``
tells each DataLoader worker which part of the stream to read.

    sampler_conformance.adapters.torch_iterable:make            contract stream            (its reference)
    sampler_conformance.adapters.torch_iterable:make_padded     contract stream_padded     (its reference)
    sampler_conformance.adapters.torch_iterable:make_truncated  contract stream_truncated  (its reference)
    sampler_conformance.adapters.torch_iterable:make_mix        contract stream_mix        (its reference)
    sampler_conformance.adapters.torch_iterable:make_on_mesh    contract stream+mesh       (device_mesh=, its reference)
    sampler_conformance.adapters.torch_iterable:docs_example    contract stream            (the docs' example as written)

``docs_example`` is the first example of ``torch.utils.data.IterableDataset``'s docstring,
verbatim: it splits the range among the workers of one process and knows nothing of ranks.
``make`` is the same idea carried to a job of several ranks, as a reference: the epoch's
order (shuffled with ``seed + epoch`` when asked) is cut into one part per rank, and each
rank's part into one per worker, of sizes differing by at most one; the epoch lives in
shared memory, so that ``set_epoch`` reaches persistent workers (what huggingface/datasets
#6710 did for #6673). ``make_padded`` and ``make_truncated`` give every rank ceil(N/W) or
floor(N/W) items, as ``DistributedSampler`` does, before its workers split them.
``make_on_mesh`` is ``make`` for a meshed job that finds its data coordinates on the
``device_mesh`` it is given. The module imports nothing of its package: the suite's selftests
load it as a file too (``--sampler=path/to/torch_iterable.py:make``).
``make_mix`` mixes sources by their weights: each (rank, worker) pair reads its own strided
share of each source (in an order shuffled with ``seed + epoch`` when asked), and draws
every item's source with a generator of its own, seeded by the seed, the epoch and the pair;
it stops at the first draw of a source whose share it has read whole, as
``datasets.interleave_datasets`` does with ``stopping_strategy="first_exhausted"``.
The first three have torch's Stateful protocol, which torchdata's ``StatefulDataLoader`` calls in
each worker, and are the references of ``+resumable`` as well (``docs_example`` has none).
"""

from __future__ import annotations

import math
from itertools import islice
from typing import Any

import numpy as np
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


def _part(items: list[int], part: int, parts: int) -> list[int]:
    """Part ``part`` of ``parts`` contiguous parts of ``items``, of sizes differing by at most one."""
    base, extra = divmod(len(items), parts)
    start = part * base + min(part, extra)
    return items[start : start + base + (part < extra)]


def cycled(items: list[int], length: int) -> list[int]:
    """``items`` repeated from its start until ``length`` (nothing, when there are none)."""
    return (items * -(-length // len(items)))[:length] if items else []


class RankWorkerSplit(IterableDataset):
    """The ids 0 .. N-1 (shuffled with seed + epoch when asked), cut into one part per rank,
    and each rank's part into one per worker, of sizes differing by at most one.

    Its state (``state_dict``/``load_state_dict``) is what each reader (the main process, or
    a worker's copy) reads: the epoch, and how many of its items it has yielded. A loaded
    state is kept apart from the live position and used once, by the next iteration, and
    only if that iteration reads the state's epoch: a loader resumed from a state taken at
    an epoch's end starts an iteration, drops what its workers prefetched and starts the
    next epoch again (torchdata 0.11 with persistent workers), which must begin at the
    epoch's first item."""

    def __init__(self, dataset_size: int, rank: int, world_size: int, seed: int = 0, shuffle: bool = False) -> None:
        self.dataset_size = dataset_size
        self.rank = rank
        self.world_size = world_size
        self.seed = seed
        self.shuffle = shuffle
        self._epoch = torch.zeros(1, dtype=torch.int64).share_memory_()  # shared with persistent workers
        self._position = {"epoch": self.epoch, "yielded": 0}
        self._loaded: dict[str, int] | None = None

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

    def rank_items(self, order: list[int]) -> list[int]:
        """This rank's part of the epoch's order."""
        return _part(order, self.rank, self.world_size)

    def worker(self) -> tuple[int, int]:
        """(this reader's worker, the rank's workers): (0, 1) in the main process."""
        info = get_worker_info()
        return (0, 1) if info is None else (info.id, info.num_workers)

    def reader_items(self) -> list[int]:
        """What this reader yields of the epoch."""
        return _part(self.rank_items(self.order()), *self.worker())

    def state_dict(self) -> dict[str, int]:
        return dict(self._position)  # a copy: the loader keeps it while the reader moves on

    def load_state_dict(self, state: dict[str, int]) -> None:
        self._loaded = {"epoch": int(state["epoch"]), "yielded": int(state["yielded"])}
        self._position = dict(self._loaded)  # the state until the reader iterates again

    def __iter__(self):
        # Not a generator function: the position moves to the new iteration's start when the
        # iterator is made, not at its first item. torchdata's workers make it, then report the
        # state before they fetch (a persistent worker resumed for the next epoch), which must
        # be where this iteration starts, not where the last one ended.
        epoch = self.epoch
        loaded, self._loaded = self._loaded, None
        start = loaded["yielded"] if loaded is not None and loaded["epoch"] == epoch else 0
        position = self._position = {"epoch": epoch, "yielded": start}
        return self._items(position, start)

    def _items(self, position: dict[str, int], start: int):
        for item in islice(self.reader_items(), start, None):
            position["yielded"] += 1
            yield item


class PaddedRankWorkerSplit(RankWorkerSplit):
    """Every rank ceil(N/W) items: the epoch's order, repeated from its start to fill W equal parts."""

    def rank_items(self, order: list[int]) -> list[int]:
        per_rank = -(-len(order) // self.world_size)
        return cycled(order, per_rank * self.world_size)[self.rank * per_rank : (self.rank + 1) * per_rank]


class TruncatedRankWorkerSplit(RankWorkerSplit):
    """Every rank floor(N/W) items: the epoch's order without its last N mod W."""

    def rank_items(self, order: list[int]) -> list[int]:
        per_rank = len(order) // self.world_size
        return order[self.rank * per_rank : (self.rank + 1) * per_rank]


def make(dataset_size: int, *, rank: int, world_size: int, seed: int = 0, shuffle: bool = False) -> RankWorkerSplit:
    return RankWorkerSplit(dataset_size, rank, world_size, seed, shuffle)


def data_coordinates(device_mesh: Any) -> tuple[int, int]:
    """``(data rank, data size)`` of this process on ``device_mesh``: over the dimensions whose
    names begin ``dp`` (dp, dp_replicate, dp_shard), outermost first, whatever their order among
    the others, as docs/meshes.md asks a sampler that takes the mesh to find them."""
    data_rank, data_size = 0, 1
    for name in device_mesh.mesh_dim_names:
        if name.startswith("dp"):
            size = device_mesh[name].size()
            data_rank = data_rank * size + device_mesh.get_local_rank(name)
            data_size *= size
    return data_rank, data_size


def make_on_mesh(
    dataset_size: int, *, rank: int, world_size: int, device_mesh: Any = None, seed: int = 0, shuffle: bool = False
) -> RankWorkerSplit:
    """:func:`make` for a meshed job: given the job's ``device_mesh``, it reads its data
    coordinates there (:func:`data_coordinates`) and not from ``rank``/``world_size``, which
    are then the global ones; the reference of the ``device_mesh=`` convention (docs/meshes.md)."""
    if device_mesh is not None:
        rank, world_size = data_coordinates(device_mesh)
    return RankWorkerSplit(dataset_size, rank, world_size, seed, shuffle)


def make_padded(
    dataset_size: int, *, rank: int, world_size: int, seed: int = 0, shuffle: bool = False
) -> PaddedRankWorkerSplit:
    return PaddedRankWorkerSplit(dataset_size, rank, world_size, seed, shuffle)


def make_truncated(
    dataset_size: int, *, rank: int, world_size: int, seed: int = 0, shuffle: bool = False
) -> TruncatedRankWorkerSplit:
    return TruncatedRankWorkerSplit(dataset_size, rank, world_size, seed, shuffle)


class WeightedMix(IterableDataset):
    """Sources mixed by ``weights``: each (rank, worker) pair draws every item's source with a
    generator of its own and reads it from its own share of that source, until it draws a
    source whose share it has read whole."""

    def __init__(
        self,
        dataset_size: int,
        rank: int,
        world_size: int,
        sources: tuple[range, ...],
        weights: tuple[float, ...],
        seed: int = 0,
        shuffle: bool = False,
    ) -> None:
        self.rank = rank
        self.world_size = world_size
        self.sources = sources
        self.probabilities = np.asarray(weights, dtype=np.float64) / sum(weights)
        self.seed = seed
        self.shuffle = shuffle
        self._epoch = torch.zeros(1, dtype=torch.int64).share_memory_()  # shared with persistent workers

    def set_epoch(self, epoch: int) -> None:
        self._epoch[0] = epoch

    def pair(self) -> tuple[int, int]:
        """(this reader's pair among all ranks' workers, how many pairs there are)."""
        info = get_worker_info()
        worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
        return self.rank * workers + worker, self.world_size * workers

    def shares(self, epoch: int, pair: int, pairs: int) -> list[list[int]]:
        """This pair's share of each source: every pairs-th item of the source's epoch order."""
        shares = []
        for source in self.sources:
            items = list(source)
            if self.shuffle:
                generator = torch.Generator().manual_seed(self.seed + epoch)
                items = [items[k] for k in torch.randperm(len(items), generator=generator).tolist()]
            shares.append(items[pair::pairs])
        return shares

    def generator(self, epoch: int, pair: int) -> np.random.Generator:
        """The pair's own draws of sources, for the epoch."""
        return np.random.default_rng([self.seed, epoch, pair])

    def __iter__(self):
        epoch = int(self._epoch[0])
        pair, pairs = self.pair()
        shares = [iter(share) for share in self.shares(epoch, pair, pairs)]
        draws = self.generator(epoch, pair)
        while True:
            item = next(shares[draws.choice(len(shares), p=self.probabilities)], None)
            if item is None:  # the drawn source's share is read whole: the pair's epoch ends
                return
            yield item


def make_mix(
    dataset_size: int,
    *,
    rank: int,
    world_size: int,
    sources: tuple[range, ...],
    weights: tuple[float, ...],
    seed: int = 0,
    shuffle: bool = False,
) -> WeightedMix:
    return WeightedMix(dataset_size, rank, world_size, sources, weights, seed, shuffle)
