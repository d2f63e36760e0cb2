"""The numeric edges an index sampler is judged at under ``--scale``, each on a partial reading.

N = 2^24 + 1 (past float32's last exact integer: a length computed through a float32 tensor
is off by one), 2^31 + 1 and 2^32 + 1 (past int32 and uint32: index arithmetic or buffers of
those types wrap), and the production size when given; W = 16,384, so that a rank's share
stays readable (131,073 indices at 2^31 + 1). Each case reads a few ranks (:func:`ranks_read`)
in the sampler process, as numpy int64 arrays, and the per-epoch invariants that hold of each
rank or of the ranks read together (``Judged.partial``) judge them. What a few ranks cannot
decide (the union covering range(N)) is not judged at these sizes.

A case is read only where the cost measured before the draws (``harness.execution.cost``)
projects it within the sampler process's memory budget and :data:`READ_BUDGET_S`: torch's
DistributedSampler, which holds the whole permutation, is judged at 2^24 + 1 and not at 2^31 + 1
(about 100 GB a rank), and the reason is the projected figure.
"""

from __future__ import annotations

from sampler_conformance.core.cost import Cost, memory, seconds
from sampler_conformance.execution import memory_budget

from .case import IndexCase

EDGE_SIZES = (2**24 + 1, 2**31 + 1, 2**32 + 1)
EDGE_WORLD = 16_384
READ_BUDGET_S = 60.0  # a case's projected time, every rank read built afresh
DRAWN_RANK_SHARE = 3  # besides the first, the last and the padded: rank W // 3


def edge_cases(size: int) -> list[IndexCase]:
    """The cases of one edge size: shuffled or not, padded or truncated, at epoch 1 (set_epoch called)."""
    return [
        IndexCase(size, EDGE_WORLD, shuffle=shuffle, drop_last=drop_last, epoch=1)
        for shuffle in (True, False)
        for drop_last in (False, True)
    ]


def edge_sizes(production_size: float | None) -> tuple[int, ...]:
    """The edges, and the production size where given (and not one of them)."""
    sizes = list(EDGE_SIZES)
    if production_size is not None and int(production_size) not in sizes:
        sizes.append(int(production_size))
    return tuple(sizes)


def ranks_read(case: IndexCase) -> tuple[int, ...]:
    """The first rank, the last, one between, and the first a padded position lands on."""
    world, size = case.world_size, case.dataset_size
    ranks = {0, world - 1, world // DRAWN_RANK_SHARE}
    if not case.drop_last and size % world:
        ranks.add(size % world)  # position N, the first padded one
    return tuple(sorted(ranks))


def unaffordable(cost: Cost | None, case: IndexCase, reason_unmeasured: str) -> str:
    """Why ``case`` is not read (empty: it is): its projected cost, or no cost to project from."""
    where = f"not judged at N={case.dataset_size:,}, W={case.world_size:,}"
    if cost is None:
        return f"{where}: one rank's cost was not measured ({reason_unmeasured}), so nothing bounds it there"
    peak, first = cost.projected(case.dataset_size, case.world_size)
    reads = len(ranks_read(case))
    budget = memory_budget.budget()
    if peak is not None and budget is not None and peak > budget:
        return (
            f"{where}: projected {memory(peak)} per rank, past the sampler process's memory budget of "
            f"{memory(budget)} (--memory-budget)"
        )
    if first is not None and first * reads > READ_BUDGET_S:
        return (
            f"{where}: projected {seconds(first)} per rank before its first index, {reads} ranks read: past "
            f"{seconds(READ_BUDGET_S)}"
        )
    return ""
