"""A real DataLoader over the sampler (built from the group), once per epoch.

Each epoch is what a training loop does: ``set_epoch(e)``, then one pass of the loader.
What the sampler itself yields is read from its twin, built the same way and driven the
same way (``set_epoch(e)``, then one pass of its own), so that neither pass is the other's
second: a sampler whose second pass differs (accelerate's SeedableRandomSampler moves to
the next epoch after each pass) breaks ``deterministic``, not the loader's invariant.

After each epoch the ranks all-reduce their batch counts, so every rank learns every
rank's count: unequal counts are what hang DDP. ``with_sampler=False`` is the loader
alone: every rank reads the whole dataset (seed 001's first case).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice

import numpy as np
from torch.utils.data import DataLoader

from sampler_conformance.core.case import Observation, ReportedLength
from sampler_conformance.execution.collectives import all_reduce_counts, loader_worker_options
from sampler_conformance.execution.scenario import RankContext, Ranks, ask
from sampler_conformance.subjects.common.index_dataset import IndexDataset, collate_indices
from sampler_conformance.subjects.common.reading import read_limit, reported_len

from ..case import IndexCase
from ..contracts import SamplerContract
from ..runs import LoaderEpochRun
from . import SamplerScenario
from .steps import Build, build, has_set_epoch, no_indices, read, set_epoch


@dataclass(frozen=True)
class LoaderEpoch:
    sampler_indices: np.ndarray  # what the sampler's twin yields this epoch (set_epoch, one pass)
    batches: tuple[np.ndarray, ...]  # what came out of the DataLoader
    loader_length: ReportedLength  # len(DataLoader), which asks the sampler's
    batch_counts: tuple[int, ...]  # every rank's batch count, as the all-reduce delivered them here


@dataclass(frozen=True)
class LoaderReadings:
    rank: int
    epochs: tuple[LoaderEpoch, ...]
    has_set_epoch: bool = True  # False: the sampler has none, so it was never called


@dataclass(frozen=True)
class RunLoader(SamplerScenario):
    epochs: tuple[int | None, ...] = (None,)
    num_workers: int = 0
    loader_drop_last: bool = False
    with_sampler: bool = True

    def run(self, rank: RankContext) -> LoaderReadings:
        case = self.case
        dataset = IndexDataset(case.dataset_size)
        batched = self.contract.yields_batches
        # The loader's sampler, and its twin: the same build, whose own passes the loader's are compared with.
        sampler = build(rank, case, self.contract, Build.GROUP) if self.with_sampler else None
        twin = build(rank, case, self.contract, Build.GROUP) if self.with_sampler else None
        # A batch sampler goes in as batch_sampler=, with the batch size and drop_last it was built with.
        loader = DataLoader(
            dataset,
            **(
                dict(batch_sampler=sampler)
                if batched and sampler is not None
                else dict(batch_size=case.batch_size, sampler=sampler, drop_last=self.loader_drop_last)
            ),
            num_workers=self.num_workers,
            **loader_worker_options(self.num_workers),
            collate_fn=collate_indices,
        )
        limit = read_limit(case.dataset_size)
        epochs = []
        for epoch in self.epochs:
            own = no_indices()
            if twin is not None:
                set_epoch(rank, twin, epoch)
                own = read(rank, twin, self.contract, case.dataset_size, rank.world_size).indices
            set_epoch(rank, sampler, epoch)
            batches = rank.call(
                f"while iterating DataLoader(num_workers={self.num_workers})",
                lambda: tuple(batch.numpy().astype(np.int64) for batch in islice(loader, limit + 1)),
                into_sampler=False,
            )
            epochs.append(
                LoaderEpoch(
                    sampler_indices=own,
                    batches=batches,
                    loader_length=reported_len(loader, "in len(DataLoader)", rank.call, sampler),
                    batch_counts=all_reduce_counts(rank, len(batches)),
                )
            )
        return LoaderReadings(rank.rank, tuple(epochs), sampler is None or has_set_epoch(sampler))


def run_loader(
    ranks: Ranks,
    spec: str,
    contract: SamplerContract,
    case: IndexCase,
    epochs: Sequence[int | None],
    *,
    num_workers: int = 0,
    loader_drop_last: bool = False,
    with_sampler: bool = True,
) -> tuple[LoaderEpochRun, ...]:
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    replies: list[LoaderReadings] = ask(
        ranks, RunLoader(spec, contract, case, tuple(epochs), num_workers, loader_drop_last, with_sampler)
    )
    has_epoch = all(reply.has_set_epoch for reply in replies)
    runs = []
    for k, epoch in enumerate(epochs):
        per_rank = [reply.epochs[k] for reply in replies]
        indices = tuple(e.sampler_indices for e in per_rank)
        runs.append(
            LoaderEpochRun(
                sampler=Observation(
                    case.with_(epoch=epoch if has_epoch else None), indices, tuple(len(i) for i in indices)
                ),
                batches=tuple(e.batches for e in per_rank),
                loader_lengths=tuple(e.loader_length for e in per_rank),
                reduced_counts=tuple(e.batch_counts for e in per_rank),
                has_set_epoch=has_epoch,
            )
        )
    return tuple(runs)
