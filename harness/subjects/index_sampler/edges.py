"""The numeric edges an index sampler is judged at under ``--scale``, each on a partial reading.

N = 2^24 + 1 (past float32's last exact integer: a length computed through a float32 tensor
is off by one), 2^31 + 1 and 2^32 + 1 (past int32 and uint32: index arithmetic or buffers of
those types wrap), and the production size when given; W = 16,384, so that a rank's share
stays readable (131,073 indices at 2^31 + 1). Each case reads a few ranks (:func:`ranks_read`)
in the sampler process, as numpy int64 arrays, and the per-epoch invariants that hold of each
rank or of the ranks read together (``Judged.partial``) judge them. What a few ranks cannot
decide (the union covering range(N)) is not judged at these sizes.

A case is read only where the cost measured before the draws projects it within the sampler
process's memory budget and a minute (``harness.execution.cost.unaffordable``): torch's
DistributedSampler, which holds the whole permutation, is judged at 2^24 + 1 and not at
2^31 + 1 (about 100 GB a rank), and the reason is the projected figure.
"""

from __future__ import annotations

from .case import IndexCase
from .plug import SamplerPlug

EDGE_SIZES = (2**24 + 1, 2**31 + 1, 2**32 + 1)
EDGE_WORLD = 16_384
SAID = (
    f"N = {', '.join(f'{n:,}' for n in EDGE_SIZES)} on W = {EDGE_WORLD:,} (past float32's exact integers, int32 "
    f"and uint32); --scale judges them on a partial reading"
)
DRAWN_RANK_SHARE = 3  # besides the first, the last and the padded: rank W // 3


def edge_cases(size: int, plug: SamplerPlug) -> list[IndexCase]:
    """The cases of one edge size: shuffled or not, padded or truncated, at epoch 1 (set_epoch
    called), of those the sampler takes: one without ``drop_last`` is built without it, and
    a case with drop_last=True would judge it by a rule it was never given."""
    return [
        IndexCase(size, EDGE_WORLD, shuffle=shuffle, drop_last=drop_last, epoch=1)
        for shuffle in ((True, False) if plug.supports("shuffle") else (True,))
        for drop_last in ((False, True) if plug.supports("drop_last") else (False,))
    ]


def edge_sizes(production_size: float | None) -> tuple[int, ...]:
    """The edges, and the production size where given (and not one of them)."""
    sizes = list(EDGE_SIZES)
    if production_size is not None and int(production_size) not in sizes:
        sizes.append(int(production_size))
    return tuple(sizes)


def ranks_read(case: IndexCase) -> tuple[int, ...]:
    """The first rank, the last, one between, and the one the first padded position (N) lands
    on, strided and contiguous: its head, position 0, is the first rank's."""
    world, size = case.world_size, case.dataset_size
    ranks = {0, world - 1, world // DRAWN_RANK_SHARE}
    if not case.drop_last and size % world:
        ranks.add(size % world)  # position N of the strided order
        ranks.add(size // -(-size // world))  # position N of the contiguous order (ceil(N / W) a rank)
    return tuple(sorted(ranks))
