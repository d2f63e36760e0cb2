"""The batch sampler's scenario: what a rank does with its sampler for one request.

``ReadBatches`` builds the rank's sampler (``make(lengths, num_replicas=W, rank=r, ...)``),
then reads the epochs asked for, ``set_epoch(e)`` before each when it has one, as a training
loop does. In a real group the ranks read in lock step: at every step each says whether it
has a batch (an all-reduce), as a training loop's gradient all-reduce makes them wait for
each other, so that a rank that runs out is seen at the step it ran out and the suite never
waits on it. ``as_rank`` has every process build that one rank's sampler (do the processes
plan the same batches?); ``reading`` asks for an independent second reading (``ask`` runs each
distinct request once per session).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from sampler_conformance.core.case import Observation, ReportedLength
from sampler_conformance.execution.collectives import read_in_lockstep
from sampler_conformance.execution.scenario import BadItems, RankContext, Ranks, Scenario, ask
from sampler_conformance.subjects.common.reading import BadIndex, batch_array, batch_sizes, cut, lens_around
from sampler_conformance.subjects.specs import mesh_said

from .case import BatchCase, read_limit
from .contracts import BatchContract
from .plug import BatchPlug, load_plug
from .runs import PlannedEpoch


class BadBatch(BadItems):
    """A batch that is not a list of int indices, or more batches than the bound allows."""

    flag = "batch_items"


def checked_batch(batch: Any) -> np.ndarray:
    """One batch as an int64 array (a list of indices, or a 1-D integer tensor:
    ``common.reading.as_batch``); :class:`BadBatch` for anything else."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    try:
        return batch_array(batch, 0)
    except BadIndex as exc:  # the index sampler's words, charged to this subject's flag
        raise BadBatch(str(exc)) from None


def _never_stops(limit: int) -> None:
    raise BadBatch(f"yielded more than {limit} batches in one epoch without stopping (an epoch must end)")


# What a rank reads, in the words of a sampler's faults ("... while starting an epoch").
EPOCH = "an epoch"


def read_alone(rank: RankContext, sampler: Any, limit: int) -> tuple[np.ndarray, ...]:
    """One epoch of one rank's batches, read on its own (a simulated rank)."""
    iterator: Iterator[Any] = rank.call(f"while starting {EPOCH}", lambda: iter(sampler))
    batches: list[np.ndarray] = []
    for step in range(limit + 1):
        batch = rank.call(f"while reading batch {step} of {EPOCH}", partial(next, iterator, None))
        if batch is None:
            return tuple(batches)
        batches.append(rank.call(f"in batch {step}", partial(checked_batch, batch)))
    rank.call("while iterating", lambda: _never_stops(limit))
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class RankBatches:
    rank: int
    # per epoch: the batches, len() after the pass, the lock step's counts, len() before the pass
    epochs: tuple[tuple[tuple[np.ndarray, ...], ReportedLength, tuple[int, ...] | None, ReportedLength], ...]
    has_set_epoch: bool

    def __reduce__(self) -> tuple[Any, ...]:
        """Sent to the controller with each epoch's batches as their items and sizes (``batch_sizes``):
        a Poisson sampler's thousand epochs are a hundred thousand small batches."""
        packed = tuple((_concatenated(batches), batch_sizes(batches), *rest) for batches, *rest in self.epochs)
        return (_unpacked, (self.rank, packed, self.has_set_epoch))


def _unpacked(rank: int, packed: tuple[tuple[Any, ...], ...], has_set_epoch: bool) -> RankBatches:
    """A :class:`RankBatches` unpickled: each epoch's batches cut from its items again."""
    return RankBatches(rank, tuple((cut(items, sizes), *rest) for items, sizes, *rest in packed), has_set_epoch)


def has_set_epoch(sampler: Any) -> bool:
    return callable(getattr(sampler, "set_epoch", None))


@dataclass(frozen=True)
class ReadBatches(Scenario):
    contract: BatchContract
    case: BatchCase
    epochs: tuple[int | None, ...] = (None,)
    as_rank: int | None = None
    reading: int = 0

    def load(self) -> BatchPlug:
        return load_plug(self.spec)

    def run(self, rank: RankContext) -> RankBatches:
        case = self.case
        plug: BatchPlug = rank.plug
        built = rank.rank if self.as_rank is None else self.as_rank
        given_rank, size, mesh = plug.placed(rank, built, case.world_size)
        sampler = rank.call(
            f"in make(lengths, num_replicas={size}, rank={given_rank}{mesh_said(mesh)}, ...)",
            lambda: plug.build(list(case.lengths), given_rank, size, **case.sampler_options(), **mesh),
        )
        limit = read_limit(case)
        readings = []
        for epoch in self.epochs:
            rank.epoch = epoch
            if epoch is not None and has_set_epoch(sampler):
                rank.call(f"in set_epoch({epoch})", partial(sampler.set_epoch, epoch))
            (batches, counts), before, after = lens_around(
                sampler, rank.call, partial(self._read, rank, sampler, limit)
            )
            readings.append((batches, after, counts, before))
        return RankBatches(rank.rank, tuple(readings), has_set_epoch(sampler))

    def _read(
        self, rank: RankContext, sampler: Any, limit: int
    ) -> tuple[tuple[np.ndarray, ...], tuple[int, ...] | None]:
        """One epoch's batches: alone (a simulated rank, or one building another rank's
        sampler), or in lock step with the group, with every rank's count."""
        if rank.backend is None or self.as_rank is not None:
            return read_alone(rank, sampler, limit), None
        return read_in_lockstep(
            rank, partial(iter, sampler), checked_batch, limit, partial(_never_stops, limit), what=EPOCH
        )


def _concatenated(batches: Sequence[np.ndarray]) -> np.ndarray:
    return np.concatenate(batches) if batches else np.empty(0, dtype=np.int64)


def read_epochs(
    ranks: Ranks,
    plug: BatchPlug,
    contract: BatchContract,
    case: BatchCase,
    epochs: Sequence[int | None] = (None,),
    *,
    as_rank: int | None = None,
    reading: int = 0,
) -> tuple[PlannedEpoch, ...]:
    """Every rank's batches of ``epochs`` of ``case``, one PlannedEpoch per epoch."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    replies: list[RankBatches] = ask(ranks, ReadBatches(plug.spec, contract, case, tuple(epochs), as_rank, reading))
    has_epoch = all(reply.has_set_epoch for reply in replies)
    return tuple(
        PlannedEpoch(
            Observation(
                case.with_(epoch=epoch),
                tuple(_concatenated(reply.epochs[k][0]) for reply in replies),
                tuple(reply.epochs[k][1] for reply in replies),
                tuple(reply.epochs[k][0] for reply in replies),
                tuple(reply.epochs[k][3] for reply in replies),
            ),
            has_epoch,
            replies[0].epochs[k][2],
        )
        for k, epoch in enumerate(epochs)
    )
