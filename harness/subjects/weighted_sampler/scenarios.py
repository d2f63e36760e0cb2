"""The weighted sampler's scenario: what a rank does with its sampler for one request.

``ReadDraws`` builds the rank's sampler (``make(weights, num_replicas=W, rank=r, ...)``), then
reads the epochs asked for, ``set_epoch(e)`` before each when it has one, as a training loop
does; ``reading`` asks for an independent second reading (``ask`` runs each distinct request
once per session). In a real group every rank first seeds the process's global generators
alike, as they are in the processes of a job: fresh processes start torch's from one fixed
seed, and ``seed_everything(seed)`` seeds every rank the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from itertools import islice
from typing import Any

import numpy as np

from sampler_conformance.core.case import Observation, ReportedLength
from sampler_conformance.execution.global_rng import seed_global_rngs
from sampler_conformance.execution.scenario import BadItems, RankContext, Ranks, Scenario, ask
from sampler_conformance.subjects.common.reading import BadIndex, as_index_array, lens_around
from sampler_conformance.subjects.specs import mesh_said

from .case import WeightedCase, read_limit
from .contracts import WeightedContract
from .plug import WeightedPlug, load_plug
from .runs import DrawnEpoch


class BadDraw(BadItems):
    """A draw that is not an int index, or more draws than the bound allows."""

    flag = "drawn_indices"


class EndlessDraws(BadItems):
    """More draws in one epoch than the read limit: a sampler that never stops. Its count is
    wrong whatever it draws, so it is draw_counts' to charge, as too many draws that stop are."""

    flag = "draw_counts"


def read_draws(sampler: Any, limit: int) -> np.ndarray:
    """One epoch of ``sampler`` as int64 indices; :class:`BadDraw` for anything else."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    items = list(islice(iter(sampler), limit + 1))
    if len(items) > limit:
        raise EndlessDraws(
            f"never stops: it drew more than {limit} indices in one epoch (the suite reads at most "
            f"4 x max(num_samples, N) + 64), where an epoch ends after num_samples draws"
        )
    try:
        return as_index_array(items)
    except BadIndex as exc:  # the index sampler's words, charged to this subject's flag
        raise BadDraw(str(exc)) from None


@dataclass(frozen=True)
class RankDraws:
    rank: int
    # per epoch: the draws, len() after the pass, len() before it
    epochs: tuple[tuple[np.ndarray, ReportedLength, ReportedLength], ...]
    has_set_epoch: bool


def has_set_epoch(sampler: Any) -> bool:
    return callable(getattr(sampler, "set_epoch", None))


@dataclass(frozen=True)
class ReadDraws(Scenario):
    contract: WeightedContract
    case: WeightedCase
    epochs: tuple[int | None, ...] = (None,)
    reading: int = 0

    def load(self) -> WeightedPlug:
        return load_plug(self.spec)

    def run(self, rank: RankContext) -> RankDraws:
        case = self.case
        plug: WeightedPlug = rank.plug
        if rank.backend is not None:
            seed_global_rngs(case.seed)
        given_rank, size, mesh = plug.placed(rank, rank.rank, case.world_size)
        sampler = rank.call(
            f"in make(weights, num_replicas={size}, rank={given_rank}{mesh_said(mesh)}, ...)",
            lambda: plug.build(list(case.weights), given_rank, size, **case.sampler_options(), **mesh),
        )
        readings = []
        for epoch in self.epochs:
            rank.epoch = epoch
            if epoch is not None and has_set_epoch(sampler):
                rank.call(f"in set_epoch({epoch})", partial(sampler.set_epoch, epoch))
            draws, before, after = lens_around(
                sampler, rank.call, lambda: rank.call("while iterating", lambda: read_draws(sampler, read_limit(case)))
            )
            readings.append((draws, after, before))
        return RankDraws(rank.rank, tuple(readings), has_set_epoch(sampler))


def read_epochs(
    ranks: Ranks,
    plug: WeightedPlug,
    contract: WeightedContract,
    case: WeightedCase,
    epochs: Sequence[int | None] = (None,),
    *,
    reading: int = 0,
) -> tuple[DrawnEpoch, ...]:
    """Every rank's draws of ``epochs`` of ``case``, one DrawnEpoch per epoch."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    replies: list[RankDraws] = ask(ranks, ReadDraws(plug.spec, contract, case, tuple(epochs), reading))
    has_epoch = all(reply.has_set_epoch for reply in replies)
    return tuple(
        DrawnEpoch(
            Observation(
                case.with_(epoch=epoch),
                tuple(reply.epochs[k][0] for reply in replies),
                tuple(reply.epochs[k][1] for reply in replies),
                lengths_before=tuple(reply.epochs[k][2] for reply in replies),
            ),
            has_epoch,
        )
        for k, epoch in enumerate(epochs)
    )
