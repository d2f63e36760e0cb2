"""The data loader's scenario: what a rank does with its loader for one request.

``ReadLoader`` builds the rank's loader (``make(N, dp_rank=r, dp_world_size=W,
global_batch_size=B, ...)``), then reads the epochs asked for, calling its epoch hook
(``reshuffle(e)`` or ``set_epoch(e)``) before each, as a training loop does, and keeps each
batch's instance ids (``plug.batch_ids``). ``reading`` asks for an independent second reading
(``ask`` runs each distinct request once per session). Simulated ranks read their epochs in
turn; in a real group each rank builds its own loader in its own process and the ranks read in
lock step (``execution.collectives.read_in_lockstep``), so a rank that runs out first is seen at
the step it ran out, as DDP's gradient all-reduce would meet it.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from itertools import count
from typing import Any

import numpy as np

from sampler_conformance.execution.collectives import default_start_from_fork_server, read_in_lockstep
from sampler_conformance.execution.scenario import BadItems, RankContext, Ranks, Scenario, ask
from sampler_conformance.subjects.common.reading import BadIndex, batch_sizes, cut, read_limit
from sampler_conformance.subjects.specs import mesh_said

from .case import LoaderCase
from .contracts import LoaderContract
from .plug import NOUN, LoaderPlug, batch_ids, epoch_hook, load_plug
from .runs import LoaderEpoch, concatenated


class BadBatch(BadItems):
    """A batch that carries no instance ids the suite can read, or more batches than the bound allows."""

    flag = "loader_batch_ids"


def checked_batch(batch: Any, position: int) -> np.ndarray:
    __tracebackhide__ = True  # failures point at the loader, not the harness
    try:
        return batch_ids(batch, position)
    except BadIndex as exc:  # the shared reader's words, charged to this subject's flag
        raise BadBatch(str(exc)) from None


def _never_stops(limit: int) -> None:
    raise BadBatch(f"yielded more than {limit} batches in one epoch without stopping (an epoch must end)")


def read_epoch(rank: RankContext, loader: Any, limit: int) -> tuple[np.ndarray, ...]:
    """One epoch of one rank's batches, as instance ids."""
    return read_batches(rank, start_epoch(rank, loader), limit)


def lockstep_epoch(rank: RankContext, loader: Any, limit: int) -> tuple[tuple[np.ndarray, ...], tuple[int, ...]]:
    """One epoch of one rank's batches in a real group, the ranks in lock step, and every
    rank's batch count as the lock step saw it."""
    positions = count()
    return read_in_lockstep(
        rank,
        lambda: iter(loader),
        lambda batch: checked_batch(batch, next(positions)),
        limit,
        partial(_never_stops, limit),
        what="an epoch",
        read_on_after_bad=True,  # a loader's workers left mid-epoch take seconds to shut down
    )


def start_epoch(rank: RankContext, loader: Any) -> Iterator[Any]:
    return rank.call("while starting an epoch", lambda: iter(loader))


def read_batches(
    rank: RankContext, iterator: Iterator[Any], limit: int, count: int | None = None
) -> tuple[np.ndarray, ...]:
    """The next ``count`` batches of a rank's running epoch (fewer where it ends first; None:
    to its end), as instance ids."""
    batches: list[np.ndarray] = []
    for step in range(limit + 1 if count is None else count):
        batch = rank.call(f"while reading batch {step} of an epoch", partial(next, iterator, None))
        if batch is None:
            return tuple(batches)
        batches.append(rank.call(f"in batch {step}", partial(checked_batch, batch, step)))
    if count is not None:
        return tuple(batches)
    rank.call("while iterating", partial(_never_stops, limit))
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class RankLoaderBatches:
    rank: int
    epochs: tuple[tuple[np.ndarray, ...], ...]  # per epoch, the batches' ids
    hook: str | None
    counts: tuple[tuple[int, ...] | None, ...] = ()  # per epoch, every rank's batches as the lock step saw them

    def __reduce__(self) -> tuple[Any, ...]:
        """Sent to the controller as each epoch's ids concatenated and the batches' sizes."""
        packed = tuple((concatenated(batches), batch_sizes(batches)) for batches in self.epochs)
        return (_unpacked, (self.rank, packed, self.hook, self.counts))


def _unpacked(
    rank: int,
    packed: tuple[tuple[np.ndarray, np.ndarray], ...],
    hook: str | None,
    counts: tuple[tuple[int, ...] | None, ...],
) -> RankLoaderBatches:
    return RankLoaderBatches(rank, tuple(cut(items, sizes) for items, sizes in packed), hook, counts)


@dataclass(frozen=True)
class ReadLoader(Scenario):
    contract: LoaderContract
    case: LoaderCase
    epochs: tuple[int | None, ...] = (None,)
    reading: int = 0
    noun = NOUN

    def load(self) -> LoaderPlug:
        return load_plug(self.spec)

    def run(self, rank: RankContext) -> RankLoaderBatches:
        case = self.case
        plug: LoaderPlug = rank.plug
        with rank_workdir(rank) as workdir:
            loader = build_loader(rank, plug, case, rank.rank, workdir)
            hook = epoch_hook(loader)
            limit = read_limit(case.dataset_size)
            readings: list[tuple[np.ndarray, ...]] = []
            counts: list[tuple[int, ...] | None] = []
            for epoch in self.epochs:
                call_hook(rank, loader, epoch)
                if rank.backend is None:
                    readings.append(read_epoch(rank, loader, limit))
                    counts.append(None)
                else:
                    batches, stepped = lockstep_epoch(rank, loader, limit)
                    readings.append(batches)
                    counts.append(stepped)
        return RankLoaderBatches(rank.rank, tuple(readings), hook, tuple(counts))


@contextmanager
def rank_workdir(rank: RankContext) -> Iterator[str]:
    """A fresh empty workdir of the rank's own; meanwhile its loaders start their workers from
    the rank's fork server, whatever start method they would take by default."""
    with tempfile.TemporaryDirectory(prefix="loader-workdir-") as workdir:
        with default_start_from_fork_server(rank.plug.worker_modules):
            yield workdir


def build_loader(rank: RankContext, plug: LoaderPlug, case: LoaderCase, dp_rank: int, workdir: str) -> Any:
    """Rank ``dp_rank``'s loader of ``case`` (of its DP size), built by the factory under test; on a
    device mesh, one that names ``device_mesh`` is given the mesh and the global rank and size
    (``FactoryPlug.placed``), and finds its data coordinates there."""
    given_rank, size, mesh = plug.placed(rank, dp_rank, case.world_size)
    return rank.call(
        f"in make({case.dataset_size}, dp_rank={given_rank}, dp_world_size={size}, "
        f"global_batch_size={case.global_batch_size}{mesh_said(mesh)}, ...)",
        lambda: plug.build(case.dataset_size, given_rank, size, **case.loader_options(), workdir=workdir, **mesh),
    )


def call_hook(rank: RankContext, loader: Any, epoch: int | None) -> None:
    """The loader's epoch hook for ``epoch``, where it has one (None: no call)."""
    rank.epoch = epoch
    hook = epoch_hook(loader)
    if epoch is not None and hook is not None:
        rank.call(f"in {hook}({epoch})", partial(getattr(loader, hook), epoch))


def read_epochs(
    ranks: Ranks,
    plug: LoaderPlug,
    contract: LoaderContract,
    case: LoaderCase,
    epochs: Sequence[int | None] = (None,),
    *,
    reading: int = 0,
) -> tuple[LoaderEpoch, ...]:
    """Every rank's batches of ``epochs`` of ``case``, one LoaderEpoch per epoch."""
    __tracebackhide__ = True  # failures point at the loader, not the harness
    # The request's case is at the first epoch it reads, as a fault of the whole reading names it
    # (replicas_read_alike on a mesh; docs/reproductions.md: its script reads that epoch).
    request = ReadLoader(plug.spec, contract, case.with_(epoch=epochs[0]), tuple(epochs), reading)
    replies: list[RankLoaderBatches] = ask(ranks, request)
    return tuple(
        LoaderEpoch.of(
            case.with_(epoch=epoch), [reply.epochs[k] for reply in replies], replies[0].hook, replies[0].counts[k]
        )
        for k, epoch in enumerate(epochs)
    )
