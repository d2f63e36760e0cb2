"""Wrap each rank's index sampler in ``BatchSampler(sampler, B, drop_last)`` and count its batches."""

from __future__ import annotations

from dataclasses import dataclass

from sampler_conformance.core.case import ReportedLength
from sampler_conformance.execution.scenario import RankContext, Ranks, ask

from ..case import IndexCase
from ..contracts import SamplerContract
from ..plug import SamplerPlug
from . import SamplerScenario
from .steps import build, count_batches


@dataclass(frozen=True)
class CountBatches(SamplerScenario):
    batch_drop_last: bool = False  # BatchSampler's; the sampler's own drop_last is the case's

    def run(self, rank: RankContext) -> tuple[int, ReportedLength]:
        sampler = build(rank, self.case, self.contract)
        return count_batches(rank, sampler, self.case.batch_size, self.batch_drop_last, self.case.dataset_size)


def batch_counts(
    ranks: Ranks, plug: SamplerPlug, contract: SamplerContract, case: IndexCase, batch_drop_last: bool
) -> tuple[list[int], list[ReportedLength]]:
    """Per rank: the batches one pass of the BatchSampler yields, and its len()."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    replies: list[tuple[int, ReportedLength]] = ask(ranks, CountBatches(plug.spec, contract, case, batch_drop_last))
    return [count for count, _ in replies], [length for _, length in replies]
