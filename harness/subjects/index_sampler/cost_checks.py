"""The check of ``+scalable``: one rank's cost follows its share of the dataset, not N.

It judges the cost probe's readings (``harness.execution.cost``), measured once per run
before the draws, at a fixed share of ``SHARE`` indices per rank as N grows a thousandfold:
a sampler that holds the whole permutation on every rank (torch's DistributedSampler) grows
with it, one that computes its share lazily does not.
"""

from __future__ import annotations

from sampler_conformance.core.cost import SHARE, Cost, large, memory, seconds
from sampler_conformance.core.evidence import Violation
from sampler_conformance.core.invariants import Declared, Invariant, Where

from .contracts import SCALABLE

DECLARED = Declared()
PROJECTED_AT = (1e9, 1024)  # where a violation says what the growth comes to


@DECLARED(
    Invariant(
        "cost_follows_share",
        "one rank's cost follows its share, not N",
        "a permutation of the whole dataset held on every rank: at N = 1e8 and W = 1,024, 4.6 GB and 12 s per rank "
        "before the first index, for a share of 97,657 (pytorch/pytorch #45427, #103339; allenai/OLMo #231)",
        "selftests.corpus.known_bad:HoldsWholePermutation",
        proven_under="torch+scalable",
        where=Where.IN_PROCESS,
        promised_by=(SCALABLE,),
        measured=True,
    )
)
def check_cost_follows_share(cost: Cost) -> list[Violation]:
    """At a fixed share per rank, neither peak memory nor the time to the first index grew
    tenfold, past 64 MB or 0.25 s, over N a hundredfold or more (``Cost.grows_with_n``)."""
    grows = cost.grows_with_n()
    if grows is None:
        return []
    peak, first = cost.projected(*PROJECTED_AT)
    return [
        Violation(
            "cost_follows_share",
            f"at a fixed share of {SHARE:,} indices per rank, rank 0's {grows[0]} grew from {grows[1]}: it grows with "
            f"the dataset, not with the rank's share, as a permutation held whole on every rank does. Projected at "
            f"N={large(PROJECTED_AT[0])}, W={PROJECTED_AT[1]:,}: about {memory(peak)} and {seconds(first)} per rank "
            f"before the first index",
        )
    ]
