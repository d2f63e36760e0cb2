"""Read the sampler once per epoch, built one or more ways: the scenario behind most invariants.

Each rank builds its sampler each way in ``builds`` and keeps that one object across the
epochs, calling ``set_epoch(epoch)`` before each epoch that is not None, as a training
loop does. In-process only ``Build.EXPLICIT`` (and ``SINGLE``) exist: there is no group.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sampler_conformance.core.case import Observation
from sampler_conformance.execution.global_rng import draw_once_from_global_rngs, seed_global_rngs
from sampler_conformance.execution.scenario import RankContext, Ranks, ask

from ..case import IndexCase
from ..contracts import SamplerContract
from ..plug import SamplerPlug
from ..reading import Reading, observation_of
from . import SamplerScenario
from .steps import Build, build, has_set_epoch, read, set_epoch

# What a real group builds by default: from the group, explicitly, and as the only rank.
GROUP_BUILDS = (Build.GROUP, Build.EXPLICIT, Build.SINGLE)
# The rank whose global RNGs drift (ReadEpochs.drifted_global_seed).
DRIFTING_RANK = 0


@dataclass(frozen=True)
class RankReadings:
    rank: int
    readings: dict[Build, tuple[Reading, ...]]  # one Reading per epoch
    has_set_epoch: bool = True  # False: the sampler has none, so it was never called


@dataclass(frozen=True)
class ReadEpochs(SamplerScenario):
    epochs: tuple[int | None, ...] = (None,)
    builds: tuple[Build, ...] = (Build.EXPLICIT,)
    # Where set, a training script's start: every rank seeds its global RNGs with it, then
    # DRIFTING_RANK draws once more from each, before the samplers are built. None: the
    # global RNGs are left as the rank process holds them.
    drifted_global_seed: int | None = None
    # The ranks read, where a partial reading reads only these (simulated ranks only); None: every rank.
    only_ranks: tuple[int, ...] | None = None

    def simulated_ranks(self) -> Sequence[int]:
        return self.only_ranks if self.only_ranks is not None else super().simulated_ranks()

    def run(self, rank: RankContext) -> RankReadings:
        if self.drifted_global_seed is not None:
            seed_global_rngs(self.drifted_global_seed)
            if rank.rank == DRIFTING_RANK:
                draw_once_from_global_rngs()
        readings = {}
        sampler = None
        for how in self.builds:
            sampler = build(rank, self.case, self.contract, how)
            world_size = 1 if how is Build.SINGLE else rank.world_size
            per_epoch = []
            for epoch in self.epochs:
                set_epoch(rank, sampler, epoch)
                per_epoch.append(read(rank, sampler, self.contract, self.case.dataset_size, world_size))
            readings[how] = tuple(per_epoch)
        return RankReadings(rank.rank, readings, has_set_epoch=has_set_epoch(sampler))


@dataclass(frozen=True)
class Readings:
    """Per epoch, each build's Observation across the ranks; a build not asked for is empty."""

    builds: dict[Build, tuple[Observation[IndexCase], ...]]
    single: tuple[
        tuple[Observation[IndexCase], ...], ...
    ]  # [epoch][rank], each of world size 1, in the rank's own process
    has_set_epoch: bool = True  # False: the sampler has none, so set_epoch was never called

    @property
    def group(self) -> tuple[Observation[IndexCase], ...]:
        return self.builds.get(Build.GROUP, ())

    @property
    def explicit(self) -> tuple[Observation[IndexCase], ...]:
        return self.builds.get(Build.EXPLICIT, ())

    @property
    def as_built(self) -> tuple[Observation[IndexCase], ...]:
        """The ranks' samplers as they build them where they run (``builds_on``): from the group
        in a real group, else explicitly."""
        return self.group or self.explicit

    @property
    def defaults(self) -> tuple[Observation[IndexCase], ...]:
        return self.builds.get(Build.DEFAULTS, ())


def read_epochs(
    ranks: Ranks,
    plug: SamplerPlug,
    contract: SamplerContract,
    case: IndexCase,
    epochs: Sequence[int | None] = (None,),
    builds: Sequence[Build] = (Build.EXPLICIT,),
    drifted_global_seed: int | None = None,
    only_ranks: tuple[int, ...] | None = None,
) -> Readings:
    """Read every rank's sampler for each epoch (after the global RNGs drift on one rank, given
    ``drifted_global_seed``), or only the simulated ranks ``only_ranks`` (a partial reading).
    A sampler that takes its rank from the group only is built from the group only (and from
    the dataset alone, if asked)."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    if plug.needs_process_group:
        builds = [b for b in builds if b in (Build.GROUP, Build.DEFAULTS)] or [Build.GROUP]
    assert only_ranks is None or ranks.world_size is None, "a partial reading reads simulated ranks"
    replies: list[RankReadings] = ask(
        ranks, ReadEpochs(plug.spec, contract, case, tuple(epochs), tuple(builds), drifted_global_seed, only_ranks)
    )
    has_epoch = all(reply.has_set_epoch for reply in replies)
    # An epoch the sampler could not be told is no epoch: the case says set_epoch was not called.
    at_epoch = [case.with_(epoch=epoch if has_epoch else None) for epoch in epochs]

    def observation(how: Build, k: int, ranks_replies: Sequence[RankReadings], at: IndexCase) -> Observation[IndexCase]:
        return observation_of(at, [reply.readings[how][k] for reply in ranks_replies], contract, only_ranks)

    per_build: dict[Build, tuple[Observation[IndexCase], ...]] = {
        how: tuple(observation(how, k, replies, at) for k, at in enumerate(at_epoch))
        for how in builds
        if how is not Build.SINGLE
    }
    single: tuple[tuple[Observation[IndexCase], ...], ...] = ()
    if Build.SINGLE in builds:
        single = tuple(
            tuple(observation(Build.SINGLE, k, [reply], at.with_(world_size=1)) for reply in replies)
            for k, at in enumerate(at_epoch)
        )
    return Readings(per_build, single, has_epoch)


def builds_on(ranks: Ranks) -> tuple[Build, ...]:
    """How each rank builds its sampler on ``ranks``: every way of ``GROUP_BUILDS`` in a real
    group (one round trip answers all the group tests of a drawn case), explicitly where the
    ranks are simulated (there is no group) or on a device mesh (built with the data
    coordinates, as a meshed job must build it; a sampler that takes its rank from the group
    is built from it all the same, and its replicas read apart)."""
    if ranks.world_size is None:
        return (Build.EXPLICIT,)
    if not ranks.group_is_data_parallel:  # a mesh: its group's defaults are the global rank and size
        return (Build.EXPLICIT, Build.SINGLE)
    return GROUP_BUILDS


def read_as_built(
    ranks: Ranks, plug: SamplerPlug, contract: SamplerContract, case: IndexCase, *, one_rank: bool = False
) -> tuple[Observation[IndexCase], Observation[IndexCase] | None]:
    """One reading of every rank, each sampler built the way the ranks build it
    (``builds_on``); and, given ``one_rank``, the one-rank reading the ranks' shares are cut
    from: each rank's own in a real group, the case read on one rank where ranks are simulated
    (they build no one-rank sampler of their own)."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    run = read_epochs(ranks, plug, contract, case, (case.epoch,), builds_on(ranks))
    if not one_rank:
        return run.as_built[0], None
    if ranks.world_size is not None:  # a real group's ranks each read a one-rank sampler too (Build.SINGLE)
        return run.as_built[0], run.single[0][0]
    return run.as_built[0], read_epochs(ranks, plug, contract, case.with_(world_size=1), (case.epoch,)).as_built[0]
