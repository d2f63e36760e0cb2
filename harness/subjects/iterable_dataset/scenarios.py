"""The streaming dataset's scenarios: what a rank does with its dataset for one request.

``ReadEpochs`` builds the rank's dataset (``make(N, rank=r, world_size=W, ...)``), then reads
the epochs asked for, ``set_epoch(e)`` before each as a training loop does: through a real
DataLoader in a process group (lock step), through the simulated one on simulated ranks
(``loading``). ``as_rank`` builds another rank's dataset in every process instead (the
ranks' processes must agree on it), ``reading`` asks for an independent second reading
(``ask`` runs each distinct request once per session).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from functools import cache
from typing import ClassVar

import numpy as np

from sampler_conformance.core.case import NoLen, Observation
from sampler_conformance.execution.scenario import RankContext, Ranks, Scenario, ask

from .case import StreamCase
from .contracts import StreamContract
from .items import Batch
from .loading import (
    EpochReading,
    has_set_epoch,
    loader_generator,
    lockstep_epoch,
    real_loader,
    set_epoch,
    simulated_epoch,
    torchrun_environment,
)
from .plug import StreamPlug, build_dataset, load_plug
from .runs import StreamEpoch


@cache
def layouts_root() -> str:
    """The folder under which every layout's workdir lies, made once per process that asks, removed at its exit."""
    root = tempfile.mkdtemp(prefix="sampler-conformance-layouts-")
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return root


def workdir_of(root: str, case: StreamCase) -> str:
    """The layout's own folder: the same for every example with the same shard sizes."""
    key = hashlib.sha1(repr(case.shard_sizes).encode()).hexdigest()[:16]
    path = os.path.join(root, f"N{case.dataset_size}-S{len(case.shard_sizes)}-{key}")
    os.makedirs(path, exist_ok=True)
    return path


@dataclass(frozen=True)
class RankEpochs:
    rank: int
    epochs: tuple[EpochReading, ...]
    has_set_epoch: bool


@dataclass(frozen=True)
class ReadEpochs(Scenario):
    noun: ClassVar[str] = "dataset"
    contract: StreamContract
    case: StreamCase
    workdir_root: str
    epochs: tuple[int | None, ...] = (None,)
    as_rank: int | None = None
    reading: int = 0

    def load(self) -> StreamPlug:
        return load_plug(self.spec)

    def run(self, rank: RankContext) -> RankEpochs:
        case = self.case
        who = rank.rank if self.as_rank is None else self.as_rank
        options = case.factory_options(workdir_of(self.workdir_root, case))
        plug: StreamPlug = rank.plug
        simulated = rank.backend is None
        # A real rank's process exports its own rank; a simulated one, or one building another
        # rank's dataset (read without workers, who would not see it), is given the rank it plays.
        plays = simulated or who != rank.rank
        with torchrun_environment(who, case.world_size) if plays else nullcontext():
            dataset = build_dataset(rank, plug, case, who, options)
            generator = loader_generator(case, who, self.reading)
            loader = None if simulated else real_loader(case, dataset, generator)
            readings = []
            for epoch in self.epochs:
                set_epoch(rank, dataset, epoch)
                readings.append(
                    simulated_epoch(rank, dataset, case, generator)
                    if loader is None
                    else lockstep_epoch(rank, loader, case)
                )
        return RankEpochs(rank.rank, tuple(readings), has_set_epoch(dataset))


def read_epochs(
    ranks: Ranks,
    plug: StreamPlug,
    contract: StreamContract,
    case: StreamCase,
    epochs: Sequence[int | None] = (None,),
    *,
    as_rank: int | None = None,
    reading: int = 0,
) -> tuple[StreamEpoch, ...]:
    """Every rank's reading of ``epochs`` of ``case``, one StreamEpoch per epoch."""
    __tracebackhide__ = True  # failures point at the dataset, not the harness
    # The request's case is at the first epoch it reads, as a fault of the whole reading names it
    # (replicas_read_alike on a mesh; docs/reproductions.md: its script reads that epoch).
    scenario = ReadEpochs(
        plug.spec, contract, case.with_(epoch=epochs[0]), layouts_root(), tuple(epochs), as_rank, reading
    )
    replies: list[RankEpochs] = ask(ranks, scenario)
    has_epoch = all(reply.has_set_epoch for reply in replies)
    return tuple(
        stream_epoch(
            case.with_(epoch=epoch),
            [reply.epochs[k].batches for reply in replies],
            has_epoch,
            replies[0].epochs[k].counts,
        )
        for k, epoch in enumerate(epochs)
    )


def read_twice(
    ranks: Ranks, plug: StreamPlug, contract: StreamContract, case: StreamCase, epoch: int | None
) -> tuple[StreamEpoch, StreamEpoch]:
    """Two fresh datasets for the same case, each read once the same way (the second an
    independent reading: another run of the training script)."""
    __tracebackhide__ = True
    (first,) = read_epochs(ranks, plug, contract, case, [epoch])
    (second,) = read_epochs(ranks, plug, contract, case, [epoch], reading=1)
    return first, second


def stream_epoch(
    case: StreamCase, per_rank: Sequence[Sequence[Batch]], has_epoch: bool, counts: tuple[int, ...] | None = None
) -> StreamEpoch:
    """The view the checks read of every rank's batches of one epoch (``counts``: the lock step's)."""
    ids = tuple(_concatenated(batches) for batches in per_rank)
    observation = Observation(
        case, ids, tuple(NoLen.NOT_ASKED for _ in ids), tuple(tuple(batch.ids for batch in b) for b in per_rank)
    )
    return StreamEpoch(observation, tuple(tuple(batch.worker for batch in b) for b in per_rank), counts, has_epoch)


def _concatenated(batches: Sequence[Batch]) -> np.ndarray:
    return np.concatenate([b.ids for b in batches]) if batches else np.empty(0, dtype=np.int64)
