"""The per-epoch invariants of the global order Q the ranks' shares are cut from
(:func:`global_order`): its padding repeats its head (``padded_epochs``), rank r's share is
Q[r::W] or the r-th block of Q, Q being the one-rank order (``strided``, ``contiguous_blocks``),
Q is range(N) in order with shuffle=False (``torch_arguments``), and an infinite stream's
blocks of N are permutations (``permutation_blocks``). Each is declared on its check in the
per-epoch table (``checks.PER_EPOCH``).
"""

from __future__ import annotations

import numpy as np

from sampler_conformance.core.case import Observation
from sampler_conformance.core.comparing import first_difference
from sampler_conformance.core.evidence import Violation, shorten
from sampler_conformance.core.invariants import Invariant

from .case import IndexCase
from .checks import FAMILIES, KNOWN_BAD, PER_EPOCH, required
from .contracts import (
    CONTIGUOUS_BLOCKS,
    PADDED_EPOCHS,
    PERMUTATION_BLOCKS,
    STRIDED,
    TORCH_ARGUMENTS,
    SamplerContract,
)


def global_order(obs: Observation[IndexCase], layout: str = "strided") -> np.ndarray | None:
    """The global order Q the ranks' shares were cut from; None if it cannot be rebuilt.

    strided: Q[i] = rank (i mod W)'s item (i div W), which needs equal lengths;
    contiguous: the ranks' blocks one after another.
    """
    if not obs.indices:
        return np.empty(0, dtype=np.int64)
    if layout == "contiguous":
        return np.concatenate(obs.indices)
    if len(set(obs.lengths)) != 1:
        return None
    return np.stack(obs.indices, axis=1).reshape(-1)


def _unequal_lengths(flag: str, obs: Observation[IndexCase]) -> Violation:
    return Violation(
        flag, f"ranks yield different numbers of indices {list(obs.lengths)}, so they do not form one global order"
    )


@PER_EPOCH.declare(
    Invariant(
        "pads_from_head",
        "padding from the head",
        "padding that is random, from the tail, or fails when N < W/2",
        f"{KNOWN_BAD}:PadsFromTail",
        promised_by=(PADDED_EPOCHS,),
    ),
    fixed={"drop_last": False},
    partial=True,
)
def check_pads_from_head(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """Q[N:] repeats the head of Q cyclically (padding = P + P[:pad], or P repeated)."""
    if obs.partial:
        return _pads_from_head_where_read(obs, contract.layout)
    order = global_order(obs, contract.layout)
    if order is None:
        return [_unequal_lengths("pads_from_head", obs)]
    n = obs.case.dataset_size
    padding = order[n:]
    if padding.size == 0:
        return []
    if n == 0:
        return [Violation("pads_from_head", f"the dataset is empty but the ranks yielded {order.size} indices")]
    expected = np.resize(order[:n], padding.size)  # np.resize repeats cyclically
    wrong = np.flatnonzero(padding != expected)
    if not wrong.size:
        return []
    k = int(wrong[0])
    return [
        Violation(
            "pads_from_head",
            f"the padding after the first N={n} items of the global order Q must repeat Q's head: "
            f"Q[{n + k}] should be Q[{k % n}] = {int(expected[k])}, got {int(padding[k])}; "
            f"padding Q[{n}:] = {shorten(padding)}, expected {shorten(expected)}",
        )
    ]


def _pads_from_head_where_read(obs: Observation[IndexCase], layout: str) -> list[Violation]:
    """On a partial reading, each padded position Q[p] (p >= N) the ranks read holds, against
    its head Q[(p - N) mod N] where a rank read holds that too: the first padded rank against
    the first rank (strided), the last rank's tail against the first rank's head (contiguous)."""
    n, world = obs.case.dataset_size, obs.case.world_size
    if len(set(obs.lengths)) != 1:
        return [_unequal_lengths("pads_from_head", obs)]
    length = obs.lengths[0] if obs.indices else 0
    if not n or length * world <= n:
        return []
    steps = np.arange(length, dtype=np.int64)
    positions = np.concatenate(
        [steps * world + rank if layout == "strided" else rank * length + steps for rank in obs.ranks or ()]
    )
    values = np.concatenate(obs.indices)
    order = np.argsort(positions)
    positions, values = positions[order], values[order]
    padded = np.flatnonzero(positions >= n)
    heads = (positions[padded] - n) % n
    found = np.searchsorted(positions, heads)
    found = np.minimum(found, positions.size - 1)
    judged = positions[found] == heads
    wrong = np.flatnonzero(judged & (values[padded] != values[found]))
    if not wrong.size:
        return []
    at, head = int(padded[wrong[0]]), int(found[wrong[0]])
    p, k = int(positions[at]), int(positions[head])
    return [
        Violation(
            "pads_from_head",
            f"the padding after the first N={n:,} items of the global order Q must repeat Q's head: Q[{p:,}] "
            f"(rank {_rank_at(p, world, length, layout)}) should be Q[{k:,}] = {int(values[head])} (rank "
            f"{_rank_at(k, world, length, layout)}), got {int(values[at])} ({wrong.size:,} of the {int(judged.sum()):,} "
            f"padded positions read with their head read differ)",
        )
    ]


def _rank_at(position: int, world: int, length: int, layout: str) -> int:
    return position % world if layout == "strided" else position // length


def check_assignment(obs: Observation[IndexCase], single_rank: Observation[IndexCase], layout: str) -> list[Violation]:
    """Rank r's share is cut from Q, the one-rank order (num_replicas=1) padded from its head:
    Q[r::W] for the strided layout, the r-th block of Q for the contiguous one.

    The one-rank order must be a permutation of range(N): the order P every rank derives
    its share from, whatever W is.
    """
    n = obs.case.dataset_size
    reference = single_rank.indices[0]
    if not _is_permutation(reference, n):
        return [
            Violation(
                layout,
                f"with num_replicas=1 the sampler should yield a permutation of range({n}), "
                f"got {reference.size} indices: {shorten(reference)}",
            )
        ]
    world = obs.case.world_size
    per_rank = max(obs.lengths) if obs.indices else 0
    order = np.resize(reference, per_rank * world) if n else np.empty(0, dtype=np.int64)
    for rank, indices in enumerate(obs.indices):
        if layout == "strided":
            share, expected = f"Q[{rank}::{world}]", order[rank::world]
        else:
            start = rank * per_rank
            share, expected = f"Q[{start}:{start + per_rank}]", order[start : start + per_rank]
        if not np.array_equal(indices, expected):
            where = first_difference(expected, indices, readings=(share, f"rank {rank}'s indices"))
            return [
                Violation(
                    layout,
                    f"rank {rank} should yield {share} = {shorten(expected)}, where Q is the order one rank "
                    f"gets with num_replicas=1 ({shorten(reference)}) padded from its head; got {shorten(indices)}; "
                    f"{where}",
                )
            ]
    return []


@PER_EPOCH.declare(
    Invariant(
        "strided",
        "strided assignment",
        "contiguous blocks where rank r must get Q[r::W]; rank-dependent orders",
        f"{KNOWN_BAD}:ContiguousBlocks",
        promised_by=(STRIDED,),
    ),
    against_one_rank=True,
)
def check_strided(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    return check_assignment(obs, required(one_rank), "strided")


@PER_EPOCH.declare(
    Invariant(
        "contiguous",
        "contiguous assignment",
        "strided shares where rank r must get a contiguous block",
        f"{FAMILIES}:ContiguousTailPadding",
        proven_under="contiguous",
        promised_by=(CONTIGUOUS_BLOCKS,),
    ),
    against_one_rank=True,
)
def check_contiguous(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    return check_assignment(obs, required(one_rank), "contiguous")


def _is_permutation(values: np.ndarray, n: int) -> bool:
    """True if ``values`` is a permutation of range(n); bincount, not a sort, to stay O(n)."""
    if values.size != n:
        return False
    if n == 0:
        return True
    if values.min() < 0 or values.max() >= n:
        return False
    return bool(np.all(np.bincount(values, minlength=n) == 1))


@PER_EPOCH.declare(
    Invariant(
        "unshuffled_in_order",
        "shuffle=False keeps dataset order",
        "shuffle=False ignored",
        f"{KNOWN_BAD}:ShuffleIgnored",
        needs=("shuffle",),
        promised_by=(TORCH_ARGUMENTS,),
    ),
    fixed={"shuffle": False},
)
def check_unshuffled_in_order(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """With shuffle=False the global order starts with range(N) in order."""
    order = global_order(obs, contract.layout)
    if order is None:
        return [_unequal_lengths("unshuffled_in_order", obs)]
    head = order[: obs.case.dataset_size]
    expected = np.arange(head.size)
    if np.array_equal(head, expected):
        return []
    k = int(np.flatnonzero(head != expected)[0])
    return [
        Violation(
            "unshuffled_in_order",
            f"with shuffle=False the global order must be range(N) in order: Q[{k}] should be {k}, "
            f"got {int(head[k])}; Q = {shorten(order)}",
        )
    ]


@PER_EPOCH.declare(
    Invariant(
        "stream_blocks_are_permutations",
        "infinite stream blocks are permutations",
        "infinite streams that repeat or skip items within an epoch",
        f"{FAMILIES}:InfiniteRankSeeded",
        proven_under="infinite",
        promised_by=(PERMUTATION_BLOCKS,),
    )
)
def check_stream_blocks(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """The ranks' interleaved prefixes form one stream whose whole blocks of N are permutations."""
    n = obs.case.dataset_size
    stream = global_order(obs, "strided")
    if stream is None:
        return [_unequal_lengths("stream_blocks_are_permutations", obs)]
    for block in range(stream.size // n if n else 0):
        items = stream[block * n : (block + 1) * n]
        if not _is_permutation(items, n):
            return [
                Violation(
                    "stream_blocks_are_permutations",
                    f"block {block} of the interleaved stream (items {block * n} to {(block + 1) * n - 1}) should be "
                    f"a permutation of range({n}), got {shorten(items)}",
                )
            ]
    return []
