"""Construct the sampler with arguments it must refuse (``validates_arguments``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sampler_conformance.execution.scenario import RankContext, Ranks, ask
from sampler_conformance.subjects.common.index_dataset import IndexDataset

from ..case import IndexCase
from ..contracts import SamplerContract
from ..plug import SamplerPlug
from . import SamplerScenario
from .steps import CONSTRUCTOR


@dataclass(frozen=True)
class ConstructWith(SamplerScenario):
    """Build once with ``num_replicas``/``rank`` as given; reply with the refusal, or None."""

    num_replicas: int = 1
    rank_number: int = 0

    def run(self, rank: RankContext) -> str | None:
        options = self.case.sampler_options(self.contract)
        dataset = IndexDataset(self.case.dataset_size)

        def construct() -> str | None:
            try:
                rank.plug.build(dataset, self.num_replicas, self.rank_number, **options)
            except Exception as exc:  # any refusal will do; DistributedSampler raises ValueError
                return f"{type(exc).__name__}: {exc}"
            return None

        return rank.call(f"{CONSTRUCTOR} (num_replicas={self.num_replicas}, rank={self.rank_number})", construct)

    def simulated_ranks(self) -> Sequence[int]:
        return (0,)  # one construction, whatever the arguments say


def refusal(
    ranks: Ranks, plug: SamplerPlug, contract: SamplerContract, case: IndexCase, num_replicas: int, rank: int
) -> str | None:
    """How the sampler refused ``num_replicas``/``rank`` (its exception), or None if it accepted them."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    return ask(ranks, ConstructWith(plug.spec, contract, case, num_replicas, rank))[0]
