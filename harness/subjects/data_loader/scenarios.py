"""The data loader's scenario: what a rank does with its loader for one request.

``ReadLoader`` builds the rank's loader (``make(N, dp_rank=r, dp_world_size=W,
global_batch_size=B, ...)``), then reads the epochs asked for, calling its epoch hook
(``reshuffle(e)`` or ``set_epoch(e)``) before each, as a training loop does, and keeps each
batch's instance ids (``plug.batch_ids``). ``reading`` asks for an independent second reading
(``ask`` runs each distinct request once per session). Simulated ranks only in this slice: in a
real group the ranks will read in lock step, as the batch sampler's do.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from sampler_conformance.core.case import NoLen, Observation
from sampler_conformance.execution.scenario import BadItems, RankContext, Ranks, Scenario, ask
from sampler_conformance.subjects.common.reading import BadIndex, batch_sizes, cut, read_limit

from .case import LoaderCase
from .contracts import LoaderContract
from .plug import NOUN, LoaderPlug, batch_ids, epoch_hook, load_plug
from .runs import LoaderEpoch


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
    iterator: Iterator[Any] = rank.call("while starting an epoch", lambda: iter(loader))
    batches: list[np.ndarray] = []
    for step in range(limit + 1):
        batch = rank.call(f"while reading batch {step} of an epoch", partial(next, iterator, None))
        if batch is None:
            return tuple(batches)
        batches.append(rank.call(f"in batch {step}", partial(checked_batch, batch, step)))
    rank.call("while iterating", partial(_never_stops, limit))
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class RankLoaderBatches:
    rank: int
    epochs: tuple[tuple[np.ndarray, ...], ...]  # per epoch, the batches' ids
    hook: str | None

    def __reduce__(self) -> tuple[Any, ...]:
        """Sent to the controller as each epoch's ids concatenated and the batches' sizes."""
        packed = tuple((_concatenated(batches), batch_sizes(batches)) for batches in self.epochs)
        return (_unpacked, (self.rank, packed, self.hook))


def _unpacked(rank: int, packed: tuple[tuple[np.ndarray, np.ndarray], ...], hook: str | None) -> RankLoaderBatches:
    return RankLoaderBatches(rank, tuple(cut(items, sizes) for items, sizes in packed), hook)


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
        with tempfile.TemporaryDirectory(prefix="loader-workdir-") as workdir:
            loader = rank.call(
                f"in make({case.dataset_size}, dp_rank={rank.rank}, dp_world_size={case.world_size}, "
                f"global_batch_size={case.global_batch_size}, ...)",
                lambda: plug.build(
                    case.dataset_size, rank.rank, case.world_size, **case.loader_options(), workdir=workdir
                ),
            )
            hook = epoch_hook(loader)
            limit = read_limit(case.dataset_size)
            readings = []
            for epoch in self.epochs:
                rank.epoch = epoch
                if epoch is not None and hook is not None:
                    rank.call(f"in {hook}({epoch})", partial(getattr(loader, hook), epoch))
                readings.append(read_epoch(rank, loader, limit))
        return RankLoaderBatches(rank.rank, tuple(readings), hook)


def _concatenated(batches: Sequence[np.ndarray]) -> np.ndarray:
    return np.concatenate(batches) if batches else np.empty(0, dtype=np.int64)


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
    replies: list[RankLoaderBatches] = ask(ranks, ReadLoader(plug.spec, contract, case, tuple(epochs), reading))
    return tuple(
        LoaderEpoch(
            Observation(
                case.with_(epoch=epoch),
                tuple(_concatenated(reply.epochs[k]) for reply in replies),
                tuple(NoLen.NOT_ASKED for _ in replies),  # len() is not part of this slice's contract
                tuple(reply.epochs[k] for reply in replies),
            ),
            replies[0].hook,
        )
        for k, epoch in enumerate(epochs)
    )
