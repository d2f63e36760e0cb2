"""Resume on another world size, as an elastic job does (docs/resume-and-elastic.md,
"The elastic protocol").

An elastic run is a chain of legs, each on its own world size. The first leg starts epoch
e on W ranks: a fresh sampler, ``set_epoch(e)``, k items, ``state_dict()``. Every later leg
runs on its own number of ranks: each rank builds a fresh sampler for that world size and
loads rank 0's state of the leg before (through ``torch.save``/``torch.load(weights_only=True)``,
as a checkpoint carries it), calls ``set_epoch(e)``, and either takes j items and saves
again, or, in the last leg, reads the rest of the pass.

The legs run one after another on the runner of their world size (the sampler process
in-process, a rank pool of that size in real groups); the controller carries rank 0's
state from one leg to the next. The first leg also reads epoch e uninterrupted on its
world size: the epoch's global order the cursor moves through (with drop_last, also built
without it: the whole order, whose tail a new world size may drop differently).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sampler_conformance.core.case import Observation
from sampler_conformance.execution.checkpoint import missing_methods, through_checkpoint
from sampler_conformance.execution.collectives import all_reduce_counts
from sampler_conformance.execution.global_rng import seed_global_rngs
from sampler_conformance.execution.scenario import RankContext, Ranks, ask

from ..case import IndexCase
from ..contracts import SamplerContract
from ..plug import SamplerPlug
from ..reading import Reading, observation_of, take
from ..runs import ElasticRun
from . import SamplerScenario
from .resume import batches_in, items_in
from .steps import Build, build, read, set_epoch


@dataclass(frozen=True)
class LegReply:
    rank: int
    uninterrupted: Reading | None  # epoch e read whole on this world size (first leg only)
    read: Reading  # the items taken before the checkpoint, or the rest of the pass (last leg)
    state: Any = None  # state_dict() after them, through a checkpoint (None in the last leg)
    missing: tuple[str, ...] = ()  # Stateful methods the sampler lacks: nothing was resumed
    # In a process group, last leg: every rank's count of the rest's items and batches, all-reduced.
    reduced_items: tuple[int, ...] = ()
    reduced_batches: tuple[int, ...] = ()
    undropped: Reading | None = None  # with drop_last, first leg: epoch e read whole, built without it


@dataclass(frozen=True)
class Leg(SamplerScenario):
    """One leg on ``case.world_size`` ranks: load ``state`` (None: start the epoch), then
    take ``taken`` items and save, or (``taken`` None) read the rest of the pass."""

    epoch: int = 0
    state: Any = None
    taken: int | None = None
    uninterrupted: bool = False

    def run(self, rank: RankContext) -> LegReply:
        case, contract = self.case, self.contract
        whole = undropped = None
        if self.uninterrupted:
            whole = self._uninterrupted(rank, case)
            if case.drop_last:
                undropped = self._uninterrupted(rank, case.with_(drop_last=False))
        seed_global_rngs(0)
        sampler = self._built(rank)
        missing = missing_methods(sampler)
        if missing:
            return LegReply(rank.rank, whole, take(iter(()), 0, contract), missing=missing)
        if self.state is not None:
            rank.call("in load_state_dict(state)", lambda: sampler.load_state_dict(self.state))
        set_epoch(rank, sampler, self.epoch)
        if self.taken is None:
            rest = read(rank, sampler, contract, case.dataset_size, case.world_size)
            if rank.backend is None:
                return LegReply(rank.rank, whole, rest, undropped=undropped)
            return LegReply(
                rank.rank,
                whole,
                rest,
                undropped=undropped,
                reduced_items=all_reduce_counts(rank, items_in(rest)),
                reduced_batches=all_reduce_counts(rank, batches_in(rest, case.batch_size)),
            )
        # Never past the pass's end (the first leg knows it): the state stays a mid-epoch one.
        taken = min(self.taken, items_in(whole)) if whole is not None else self.taken
        iterator = rank.call("in iter()", lambda: iter(sampler))
        consumed = rank.call("while iterating", lambda: take(iterator, taken, contract))
        # A state that cannot make the trip goes on as it is: plain_state charges that, not these tests.
        state, _ = through_checkpoint(rank.call("in state_dict()", sampler.state_dict))
        return LegReply(rank.rank, whole, consumed, state, undropped=undropped)

    def _uninterrupted(self, rank: RankContext, case: IndexCase) -> Reading:
        """Epoch e, read whole from a sampler built for ``case``."""
        seed_global_rngs(0)
        sampler = self._built(rank, case)
        set_epoch(rank, sampler, self.epoch)
        return read(rank, sampler, self.contract, case.dataset_size, case.world_size)

    def _built(self, rank: RankContext, case: IndexCase | None = None) -> Any:
        """This rank's sampler for the leg: from the process group in one, else explicit."""
        how = Build.EXPLICIT if rank.backend is None else Build.GROUP
        return build(rank, case or self.case, self.contract, how)


def elastic_run(
    ranks_of: Callable[[int], Ranks],
    plug: SamplerPlug,
    contract: SamplerContract,
    case: IndexCase,
    *,
    epoch: int,
    legs: tuple[tuple[int, int], ...],
    last_world_size: int,
) -> ElasticRun:
    """Run ``legs`` ((world size, items taken on each rank) each), then read the rest of the
    pass on ``last_world_size`` ranks; ``ranks_of(W)`` runs a scenario on W ranks."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    state = None
    consumed: list[Observation[IndexCase]] = []
    whole: Observation[IndexCase] | None = None
    undropped: Observation[IndexCase] | None = None
    leg_case = case
    for position, (world, taken) in enumerate(legs):
        leg_case = case.with_(world_size=world, epoch=epoch)
        leg = Leg(plug.spec, contract, leg_case, epoch, state, taken, uninterrupted=position == 0)
        replies: list[LegReply] = ask(ranks_of(world), leg)
        if position == 0:
            whole = _observed(leg_case, [reply.uninterrupted for reply in replies], contract)
            undropped = whole
            if case.drop_last:
                undropped = _observed(leg_case.with_(drop_last=False), [reply.undropped for reply in replies], contract)
        if replies[0].missing:
            nothing = _observed(leg_case, [], contract)
            return ElasticRun(epoch, (world,), (), nothing, nothing, (), nothing, replies[0].missing)
        consumed.append(_observed(leg_case, [reply.read for reply in replies], contract))
        state = replies[0].state
    last_case = case.with_(world_size=last_world_size, epoch=epoch)
    replies = ask(ranks_of(last_world_size), Leg(plug.spec, contract, last_case, epoch, state))
    assert whole is not None and undropped is not None
    return ElasticRun(
        epoch=epoch,
        world_sizes=(*(world for world, _ in legs), last_world_size),
        taken=tuple(taken for _, taken in legs),
        uninterrupted=whole,
        undropped=undropped,
        consumed=tuple(consumed),
        rest=_observed(last_case, [reply.read for reply in replies], contract),
        missing=(),
        reduced_items=tuple(reply.reduced_items for reply in replies if reply.reduced_items),
        reduced_batches=tuple(reply.reduced_batches for reply in replies if reply.reduced_batches),
    )


def _observed(case: IndexCase, readings: list[Reading | None], contract: SamplerContract) -> Observation[IndexCase]:
    return observation_of(case, [reading for reading in readings if reading is not None], contract)
