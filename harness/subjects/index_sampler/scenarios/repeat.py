"""Read the sampler three ways without set_epoch: twice from one object, once fresh after the
global RNGs were reseeded; and whether iterating advanced the global RNGs (``deterministic``)."""

from __future__ import annotations

from dataclasses import dataclass

from sampler_conformance.core.case import Observation
from sampler_conformance.execution.global_rng import advanced, global_rng_fingerprints, seed_global_rngs
from sampler_conformance.execution.scenario import RankContext, Ranks, ask

from ..case import IndexCase
from ..contracts import SamplerContract
from ..plug import SamplerPlug
from ..reading import Reading, observation_of
from . import SamplerScenario
from .steps import build, read


@dataclass(frozen=True)
class RepeatReadings:
    first: Reading
    again: Reading  # the same sampler object, iterated a second time
    fresh: Reading  # a new sampler with the same arguments, the global RNGs reseeded
    touched: tuple[str, ...]  # the global RNGs the first iteration advanced


@dataclass(frozen=True)
class ReadThreeWays(SamplerScenario):
    global_seed: int = 0

    def run(self, rank: RankContext) -> RepeatReadings:
        n = self.case.dataset_size
        seed_global_rngs(self.global_seed)
        sampler = build(rank, self.case, self.contract)
        before = global_rng_fingerprints()
        first = read(rank, sampler, self.contract, n, rank.world_size)
        touched = advanced(before, global_rng_fingerprints())
        again = read(rank, sampler, self.contract, n, rank.world_size)
        seed_global_rngs(self.global_seed + 1)
        fresh = read(rank, build(rank, self.case, self.contract), self.contract, n, rank.world_size)
        return RepeatReadings(first, again, fresh, tuple(touched))


@dataclass(frozen=True)
class ThreeWays:
    first: Observation[IndexCase]
    again: Observation[IndexCase]
    fresh: Observation[IndexCase]
    touched: tuple[str, ...]  # on any rank


def read_three_ways(
    ranks: Ranks, plug: SamplerPlug, contract: SamplerContract, case: IndexCase, global_seed: int
) -> ThreeWays:
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    replies: list[RepeatReadings] = ask(ranks, ReadThreeWays(plug.spec, contract, case, global_seed))

    touched = sorted({name for reply in replies for name in reply.touched})
    return ThreeWays(
        observation_of(case, [r.first for r in replies], contract),
        observation_of(case, [r.again for r in replies], contract),
        observation_of(case, [r.fresh for r in replies], contract),
        tuple(touched),
    )
