"""Reading one epoch of a rank's dataset the way a DataLoader does: for real in a process
group, simulated in the in-process runner.

A DataLoader over an IterableDataset gives each worker its own copy of the dataset (pickled,
as a forkserver start sends it), tells it who it is through ``get_worker_info()``, seeds
its generators, lets it batch its own stream (each worker its own last partial batch), and
yields the workers' batches in turn, worker 0 first, skipping those that ran out. The
simulation does exactly that in one process, without starting any (``simulated_epoch``);
persistent workers, which keep their copy across epochs, are left to real loaders.

In a real group (``lockstep_epoch``) the ranks all-reduce "I have a batch" at every step, as
a training loop's gradient all-reduce makes them wait for each other: a rank that runs out
first is seen at the step it ran out, and the suite never waits on it.
"""

from __future__ import annotations

import pickle
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from itertools import islice
from typing import Any

import torch
from torch.utils.data import DataLoader
from torch.utils.data._utils import worker as torch_worker

from sampler_conformance.execution.collectives import loader_worker_options, read_in_lockstep
from sampler_conformance.execution.global_rng import seed_global_rngs
from sampler_conformance.execution.scenario import RankContext
from sampler_conformance.subjects.common.exported import exported
from sampler_conformance.subjects.common.reading import read_limit

from .case import StreamCase
from .items import MAIN_PROCESS, BadItem, Batch, batch_of, checked, collate_ids

# Where a dataset that cannot be pickled fails, in a fault's words: in a DataLoader's
# workers, wherever they do not start by fork (docs/streaming-datasets.md).
PICKLED_FOR_WORKERS = (
    "while pickling it for its DataLoader workers (a DataLoader whose workers start by forkserver or spawn, the "
    "default on macOS and Windows and on Linux from Python 3.14, sends each worker a pickled copy; only fork "
    "lets them inherit it)"
)


@dataclass(frozen=True)
class EpochReading:
    """One rank's epoch: its batches in the order the loader yielded them, and, from a real
    group, every rank's batch count as the lock step showed it."""

    batches: tuple[Batch, ...]
    counts: tuple[int, ...] | None = None


def has_set_epoch(dataset: Any) -> bool:
    return callable(getattr(dataset, "set_epoch", None))


def set_epoch(rank: RankContext, dataset: Any, epoch: int | None) -> None:
    """As a training loop does, when the dataset has set_epoch."""
    rank.epoch = epoch
    if epoch is not None and has_set_epoch(dataset):
        rank.call(f"in set_epoch({epoch})", lambda: dataset.set_epoch(epoch))


def _batches(items: list[Any], case: StreamCase, worker: int) -> list[Batch]:
    """A worker's items cut into the batches its DataLoader makes, checked."""
    size = case.batch_size
    cut = [items[i : i + size] for i in range(0, len(items), size)]
    if case.drop_last and cut and len(cut[-1]) < size:
        cut.pop()
    return [checked(batch_of(batch, worker)) for batch in cut]


def _read_worker(copy: Any, limit: int, case: StreamCase, worker: int) -> list[Batch]:
    return _batches(read_to_end(copy, limit), case, worker)


def read_to_end(iterable: Any, limit: int) -> list[Any]:
    """Everything ``iterable`` yields; :class:`BadItem` once it has yielded more than ``limit``."""
    items = list(islice(iter(iterable), limit + 1))
    if len(items) > limit:
        _never_stops(limit)
    return items


@contextmanager
def _as_worker(worker: int, num_workers: int, copy: Any, base_seed: int) -> Iterator[None]:
    """What torch's worker loop sets up before it iterates its copy: the worker info and the
    seeds (of the CPU generators: torch.manual_seed's queued seeding of devices never initialised,
    with a stack trace each, took 12% of a stream's certification)."""
    seed = base_seed + worker
    seed_global_rngs(seed)
    torch_worker._worker_info = torch_worker.WorkerInfo(id=worker, num_workers=num_workers, seed=seed, dataset=copy)
    try:
        yield
    finally:
        torch_worker._worker_info = None


@contextmanager
def torchrun_environment(rank: int, world_size: int) -> Iterator[None]:
    """The rank and world size torchrun exports to a rank (and its DataLoader workers
    inherit), set for a simulated rank while it builds and reads its dataset: libraries that
    take the rank from the environment (webdataset's ``split_by_node``) read the one it
    plays. A real group's rank processes export them themselves (``harness.execution.rank_body``).
    LOCAL_RANK stays: it names the rank's GPU, which the suite's collectives use."""
    with exported({"RANK": rank, "WORLD_SIZE": world_size}):
        yield


def loader_generator(case: StreamCase, rank: int, reading: int) -> torch.Generator:
    """The generator a rank's DataLoader draws its workers' base seed from, each epoch (its
    ``generator``): seeded from the case, the rank and the reading, so that the same command
    reads the same way in every run. Another reading stands for another run of the training
    script, which draws other worker seeds unless it seeds torch: a stream that follows them
    rather than its ``seed`` fails ``stream_deterministic``."""
    return torch.Generator().manual_seed(case.loader_seed(rank, reading))


def simulated_epoch(rank: RankContext, dataset: Any, case: StreamCase, generator: torch.Generator) -> EpochReading:
    """One epoch as a DataLoader with ``case.num_workers`` fresh workers, and ``generator``, reads it, in this process."""
    limit = read_limit(case.dataset_size)
    if case.num_workers == 0:
        return EpochReading(
            tuple(rank.call("while iterating", lambda: _batches(read_to_end(dataset, limit), case, MAIN_PROCESS)))
        )
    # The base seed a DataLoader draws from its generator for each epoch's workers.
    base_seed = int(torch.empty((), dtype=torch.int64).random_(generator=generator).item())
    # Every worker's copy is made before any worker reads, as a DataLoader sends them when it starts.
    copies = [
        rank.call(PICKLED_FOR_WORKERS, lambda: pickle.loads(pickle.dumps(dataset))) for _ in range(case.num_workers)
    ]
    streams = []
    for worker, copy in enumerate(copies):
        with _as_worker(worker, case.num_workers, copy, base_seed):
            streams.append(
                rank.call(
                    f"while iterating in worker {worker} of {case.num_workers}",
                    partial(_read_worker, copy, limit, case, worker),
                )
            )
    longest = max(map(len, streams))
    return EpochReading(tuple(s[step] for step in range(longest) for s in streams if step < len(s)))


def real_loader(
    case: StreamCase, dataset: Any, generator: torch.Generator, loader_class: type[DataLoader] = DataLoader
) -> DataLoader:
    """The DataLoader the suite puts over a rank's dataset (``loader_class``: torchdata's
    ``StatefulDataLoader``, for a resume)."""
    workers = case.num_workers
    # Up to 3 workers per rank on a machine of 2 cores: torch warns on every iterator, to no purpose here.
    warnings.filterwarnings("ignore", message="This DataLoader will create", category=UserWarning)
    return loader_class(
        dataset,
        batch_size=case.batch_size,
        drop_last=case.drop_last,
        num_workers=workers,
        persistent_workers=case.persistent_workers and workers > 0,
        **loader_worker_options(workers, dataset),
        collate_fn=collate_ids,
        generator=generator,
    )


def lockstep_epoch(rank: RankContext, loader: DataLoader, case: StreamCase) -> EpochReading:
    """One epoch of a real DataLoader, the ranks in lock step
    (:func:`~sampler_conformance.execution.collectives.read_in_lockstep`). A rank whose
    dataset yields an item without an id reads on to the end of its epoch, so that its
    loader's workers shut down as at any epoch's end."""
    limit = read_limit(case.dataset_size)

    def start() -> Iterator[Batch]:
        if case.num_workers:  # before torch does it: what cannot be pickled is the dataset's fault, in words
            rank.call(PICKLED_FOR_WORKERS, partial(pickle.dumps, loader.dataset))
        return iter(loader)

    batches, counts = read_in_lockstep(
        rank,
        start,
        checked,
        limit,
        partial(_never_stops, limit),
        what=f"DataLoader(num_workers={case.num_workers}, persistent_workers={case.persistent_workers})",
        into_sampler=False,
        read_on_after_bad=True,
    )
    return EpochReading(batches, counts)


def _never_stops(limit: int) -> None:
    raise BadItem(f"yielded more than {limit} items in one epoch without stopping (a stream must end each epoch)")
