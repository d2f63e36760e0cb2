"""The per-epoch invariants, each declared on its check (a pure function over one reading of
every rank) in the per-epoch table (``PER_EPOCH``) that their tests are generated from.

Each check takes :class:`Observation` objects and returns a list of :class:`Violation`
(empty when the invariant holds). They are vectorised with numpy so that checking ten
million indices costs less than producing them, and they are the only implementation: the
in-process properties and the real process groups both call them. The order invariants
across passes and processes are in ``order_checks.py``, the batch counts and the DataLoader's
in ``loader_checks.py``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sampler_conformance.core.case import Observation
from sampler_conformance.core.comparing import first_difference
from sampler_conformance.core.counting import check_reported_lengths, index_counts
from sampler_conformance.core.evidence import Violation, counted, shorten
from sampler_conformance.core.invariants import Invariant, OneEpoch

from .case import IndexCase
from .contracts import (
    ASPECT_GROUPED,
    CONTIGUOUS_BLOCKS,
    CONTIGUOUS_SHARES,
    COVERS,
    EXACT_PARTITION,
    FINITE_EPOCHS,
    LABEL_GROUPS,
    PADDED_EPOCHS,
    PER_RANK_BATCHES,
    PER_RANK_CONTIGUOUS_BATCHES,
    PERMUTATION_BLOCKS,
    REPEATED_GROUPS,
    STRIDED,
    STRIDED_SHARES,
    TORCH_ARGUMENTS,
    TRUNCATED_EPOCHS,
    VALID,
    WHOLE_BATCHES,
    SamplerContract,
)

# Where the known-bad samplers that prove the invariants can fail live (selftests/corpus/),
# and the contracts the extensions' are certified under.
KNOWN_BAD = "selftests.corpus.known_bad"
FAMILIES = "selftests.corpus.families"
MULTIPROCESS_BAD = "selftests.corpus.multiprocess_bad"
RESUME_BAD = "selftests.corpus.resume_bad"
RESUMABLE_UNDER = "torch+resumable"
ELASTIC_BAD = "selftests.corpus.elastic_bad"
ELASTIC_UNDER = "torch+elastic"

# A per-epoch judge: the reading of every rank, the contract, the one-rank reading (None unless
# the invariant is declared against_one_rank).
Judge = Callable[[Observation[IndexCase], SamplerContract, Observation[IndexCase] | None], list[Violation]]

# Every per-epoch invariant, declared on its check below, in the registry's order.
PER_EPOCH: OneEpoch[Judge] = OneEpoch()


def _required(one_rank: Observation[IndexCase] | None) -> Observation[IndexCase]:
    if one_rank is None:
        raise TypeError("this invariant is judged against the one-rank reading; pass it")
    return one_rank


UNEVEN_STEPS_HANG = "the rank with more batches waits in a collective the others never join, and DDP hangs"


@PER_EPOCH.declare(
    Invariant(
        "len_matches_iter",
        "len() matches iteration",
        "__len__ disagreeing with iteration (wrong step counts, LR schedules)",
        f"{KNOWN_BAD}:LenIgnoresDropLast",
        promised_by=(FINITE_EPOCHS,),
    )
)
def check_len_matches_iter(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """Each rank's len() is what its pass yielded. A rank with no len() to compare (a sampler
    without ``__len__``) is left out: :func:`missing_len` charges that, in the invariant's own tests.
    len() is asked before the pass too, and one that raises is charged here alone."""
    return check_reported_lengths(
        obs, "len_matches_iter", "len(sampler) is {said}, but one iteration yielded {yielded}", ("index", "indices")
    )


def missing_len(contract: SamplerContract) -> Violation:
    """The one violation a sampler without ``__len__`` gets: under len_matches_iter, where the
    contract promises len(). The same on every case, so the summary shows it once."""
    unit = "batches" if contract.yields_batches else "indices"
    return Violation(
        "len_matches_iter",
        f"the sampler defines no __len__, so len(sampler) raises TypeError; contract {contract.name!r} requires "
        f"it, as a DataLoader's len(), LR schedules and progress bars call it. Define __len__ returning the "
        f"number of {unit} one pass yields on this rank",
        every_case=True,
    )


@PER_EPOCH.declare(
    Invariant(
        "equal_length",
        "equal per-rank lengths",
        "one rank running one step more than the others: DDP hangs",
        f"{KNOWN_BAD}:FloorNotCeil",
        promised_by=(PADDED_EPOCHS, TRUNCATED_EPOCHS),
    )
)
def check_equal_length(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    case = obs.case
    expected = contract.expected_length(case.dataset_size, case.world_size, case.drop_last)
    rule = contract.length_words(case.drop_last)
    wrong = {rank: n for rank, n in enumerate(obs.lengths) if n != expected}
    if not wrong:
        return []
    got = ", ".join(f"rank {rank}: {n}" for rank, n in list(wrong.items())[:8])
    uneven = (
        " Ranks that yield different counts run different numbers of steps, and DDP hangs."
        if len(set(obs.lengths)) > 1
        else ""
    )
    return [
        Violation(
            "equal_length",
            f"every rank should yield {counted(expected, 'index', 'indices')} ({rule}), got {got}.{uneven}",
        )
    ]


@PER_EPOCH.declare(
    Invariant(
        "balanced",
        "balanced per-rank lengths",
        "an eval shard far larger than the others",
        f"{FAMILIES}:OverlappingPartition",
        proven_under="partition",
        promised_by=(EXACT_PARTITION,),
    )
)
def check_balanced(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """An exact partition: lengths sum to N and differ by at most one."""
    n = obs.case.dataset_size
    lengths = obs.lengths
    if sum(lengths) == n and (not lengths or max(lengths) - min(lengths) <= 1):
        return []
    return [
        Violation(
            "balanced",
            f"the ranks' lengths should sum to N={n} and differ by at most 1 "
            f"(each floor(N/W) or ceil(N/W)), got {list(lengths)}",
        )
    ]


@PER_EPOCH.declare(
    Invariant(
        "valid_indices",
        "valid indices",
        "tensors, floats, negative or out-of-range indices, samplers that never stop; under the batch contracts, "
        "empty batches too (a rank past the last global batch yielding [], which fails its step)",
        f"{KNOWN_BAD}:YieldsTensors",
        promised_by=(VALID,),
    )
)
def check_valid_indices(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    n = obs.case.dataset_size
    violations = []
    for rank, indices in enumerate(obs.indices):
        bad = np.flatnonzero((indices < 0) | (indices >= n))
        if bad.size:
            position = int(bad[0])
            violations.append(
                Violation(
                    "valid_indices",
                    f"rank {rank} yielded {int(indices[position])} at position {position}; "
                    f"indices must lie in [0, N) = [0, {n}) ({bad.size} out of range)",
                )
            )
    for rank, batches in enumerate(obs.batches or ()):
        empty = [position for position, batch in enumerate(batches) if batch.size == 0]
        if empty:
            violations.append(
                Violation(
                    "valid_indices",
                    f"rank {rank} yielded an empty batch as batch {empty[0]} ({len(empty)} in all); a batch holds at "
                    f"least one index: a DataLoader's default collate cannot batch nothing, so the rank fails its step",
                )
            )
    return violations


@PER_EPOCH.declare(
    Invariant(
        "covers",
        "union coverage",
        "silently dropped data",
        f"{KNOWN_BAD}:RankInSeed",
        promised_by=(
            PADDED_EPOCHS,
            EXACT_PARTITION,
            COVERS,
        ),
    )
)
def check_coverage(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """Without drop_last the ranks together yield every index of range(N)."""
    case = obs.case
    if case.drop_last:
        return []
    missing = np.flatnonzero(index_counts([obs], obs.case.dataset_size) == 0)
    if not missing.size:
        return []
    return [
        Violation(
            "covers",
            f"without drop_last the ranks together must cover range(N) = range({case.dataset_size}); "
            f"{counted(missing.size, 'index', 'indices')} {'is' if missing.size == 1 else 'are'} never yielded: "
            f"{shorten(missing)}",
        )
    ]


@PER_EPOCH.declare(
    Invariant(
        "disjoint",
        "ranks disjoint unless padded",
        "silently duplicated data beyond the padding",
        f"{KNOWN_BAD}:DropLastIgnored",
        promised_by=(
            PADDED_EPOCHS,
            TRUNCATED_EPOCHS,
            EXACT_PARTITION,
        ),
    )
)
def check_disjoint(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """No index is yielded twice beyond the padding the contract allows (none with drop_last)."""
    case = obs.case
    counts = index_counts([obs], obs.case.dataset_size)
    allowed = contract.padding_size(case.dataset_size, case.world_size, case.drop_last)
    surplus = int(counts.sum()) - int(np.count_nonzero(counts))
    if surplus <= allowed:
        return []
    repeated = np.flatnonzero(counts > 1)
    first = int(repeated[0])
    holders = [rank for rank, indices in enumerate(obs.indices) if np.any(indices == first)]
    why = (
        f"the length rule is {contract.length_words(case.drop_last)}"
        if contract.drops_tail(case.drop_last)
        else f"the contract allows {allowed} padded items here"
    )
    return [
        Violation(
            "disjoint",
            f"{surplus} items repeat an index already yielded, but {why}; repeated indices: "
            f"{shorten(repeated)}; index {first} comes from ranks {holders}",
        )
    ]


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
)
def check_pads_from_head(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """Q[N:] repeats the head of Q cyclically (padding = P + P[:pad], or P repeated)."""
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
    return check_assignment(obs, _required(one_rank), "strided")


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
    return check_assignment(obs, _required(one_rank), "contiguous")


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


@PER_EPOCH.declare(
    Invariant(
        "whole_batches",
        "batches whole on one rank",
        "batches split across ranks",
        f"{FAMILIES}:SplitBatches",
        proven_under="batch",
        promised_by=(WHOLE_BATCHES,),
    ),
    against_one_rank=True,
)
def check_whole_batches(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """Rank r's k-th batch is batch k*W + r of the one-rank batch sequence (padding rounds aside)."""
    single_rank = _required(one_rank)
    assert obs.batches is not None and single_rank.batches is not None
    reference = single_rank.batches[0]
    world = obs.case.world_size
    for rank, batches in enumerate(obs.batches):
        for k, batch in enumerate(batches):
            position = k * world + rank
            if position < len(reference) and not np.array_equal(batch, reference[position]):
                said = (
                    f"rank {rank}'s batch {k} should be batch {position} of the one-rank sequence, "
                    f"{shorten(reference[position])}, got {shorten(batch)}"
                )
                if world > 1 and obs.case.batch_size > 1 and not share_batches_mismatch(obs, single_rank.indices[0]):
                    said += ": " + STRIDED_SHARES_BATCHED.format(w=world, b=obs.case.batch_size, w2=2 * world)
                return [Violation("whole_batches", said)]
    return []


# What a sampler that batches its own strided share does, against what the batch contract promises.
STRIDED_SHARES_BATCHED = (
    "each rank cuts its batches from its own strided share of one order Q (rank r's batches are Q[r::{w}] cut "
    "into batches of {b}), the layout of DataLoader(batch_size={b}, sampler=DistributedSampler(...)); the batch "
    "contract promises accelerate's, where rank r gets whole batches r, r+{w}, r+{w2}, ... of the one-rank "
    "sequence; --contract=rank_batches promises this layout"
)


def share_batches_mismatch(obs: Observation[IndexCase], order: np.ndarray, layout: str = STRIDED_SHARES) -> str:
    """Where the ranks' batches are not each rank's share of the one-rank order Q
    (``order``), cut into batches of batch_size but for the last. The share is strided
    (Q[r::W], Q padded from its head to a multiple of W, as DistributedSampler pads it; with
    drop_last, that share less fewer than a batch and one item) or a contiguous block (the
    r-th of W blocks of ceil(N/W) items of Q so padded; with drop_last, of N // W items of Q,
    less fewer than a batch). Where Q itself lost its tail to a dropped last batch, what the
    share holds there is not known, and any item matches. Empty when they are."""
    assert obs.batches is not None
    world, size, n = obs.case.world_size, obs.case.batch_size, obs.case.dataset_size
    if not n or not order.size:
        return "" if not any(obs.batches) else f"the dataset is empty, but the ranks yield {list(obs.lengths)} items"
    if order.size > n:
        return f"the one-rank order holds {order.size} items for N={n}"
    contiguous, drop_last = layout == CONTIGUOUS_SHARES, obs.case.drop_last
    per_rank = n // world if contiguous and drop_last else -(-n // world)
    source = np.arange(per_rank * world)
    source = np.where(source < n, source, (source - n) % n)  # the padding repeats Q from its head
    known = source < order.size
    padded = np.where(known, order[np.minimum(source, order.size - 1)], -1)
    for rank, batches in enumerate(obs.batches):
        where = slice(rank * per_rank, (rank + 1) * per_rank) if contiguous else slice(rank, None, world)
        share, items, unknown = padded[where], obs.indices[rank], ~known[where]
        named = f"contiguous share Q[{where.start}:{where.stop}]" if contiguous else f"strided share Q[{rank}::{world}]"
        dropped = size - 1 + (n % world != 0 and not contiguous) if drop_last else 0
        if not max(share.size - dropped, 0) <= items.size <= share.size:
            return (
                f"rank {rank} yields {items.size} items; its {named} of Q, padded from its head, holds {share.size}"
                + (", less fewer than a batch with drop_last" if drop_last else "")
            )
        head = share[: items.size]
        wrong = np.flatnonzero(np.where(unknown[: items.size], items, head) != items)
        if wrong.size:
            k = int(wrong[0])
            return (
                f"rank {rank}'s item {k} should be item {k} of its {named} = {shorten(share)}, got "
                f"{int(items[k])}; its batches, one after another: {shorten(items)}"
            )
        lengths = [len(batch) for batch in batches]
        if any(length != size for length in lengths[:-1]) or (lengths and not 0 < lengths[-1] <= size):
            return f"rank {rank}'s batches hold {lengths} items: batch_size={size} each, the last one 1 to {size}"
    return ""


@PER_EPOCH.declare(
    Invariant(
        "share_batched",
        "batches cut from the rank's own share",
        "batches formed across ranks where each rank batches its own share (DataLoader(batch_size=B, "
        "sampler=DistributedSampler(...))), or shares batched out of order",
        f"{FAMILIES}:ContiguousSharesBatched",
        proven_under="rank_batches",
        promised_by=(PER_RANK_BATCHES, PER_RANK_CONTIGUOUS_BATCHES),
    ),
    against_one_rank=True,
)
def check_share_batched(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """Rank r's batches, in order, are its share of the one-rank order (strided or contiguous,
    as the contract's layout says) cut into batch_size."""
    single_rank = _required(one_rank)
    mismatch = share_batches_mismatch(obs, single_rank.indices[0], contract.layout)
    return [Violation("share_batched", mismatch)] if mismatch else []


# A generation batch, in the words of a violation.
GATHERED = "round {t} of the ranks' batches, rank 0's first, as the trainer's gather concatenates them"


def generation_batches(obs: Observation[IndexCase]) -> list[np.ndarray]:
    """Round t of the ranks' batches, gathered rank by rank: what trl's GRPO trainer gathers
    across processes and scores together. Rounds some rank lacks are left out: unequal batch
    counts are ``equal_batches``' to charge."""
    assert obs.batches is not None
    return [np.concatenate(round_) for round_ in zip(*obs.batches, strict=False)]


@PER_EPOCH.declare(
    Invariant(
        "repeat_groups",
        "generation batches of whole groups",
        "copies of one sample not adjacent in the gathered generation batch (the group repeated where each sample "
        "should be, trl #4531), or a group cut across two: the trainer's rewards.view(-1, G) then normalises "
        "rewards across different samples",
        f"{FAMILIES}:CopiesNotAdjacent",
        proven_under="groups",
        promised_by=(REPEATED_GROUPS,),
    )
)
def check_repeat_groups(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """Each generation batch is groups of G consecutive copies of one index."""
    g = obs.case.repeats
    for t, batch in enumerate(generation_batches(obs)):
        if batch.size % g:
            return [
                Violation(
                    "repeat_groups",
                    f"generation batch {t} ({GATHERED.format(t=t)}) holds {batch.size} items, not a multiple of "
                    f"G={g}, so a group is cut across generation batches: {shorten(batch)}",
                )
            ]
        groups = batch.reshape(-1, g)
        mixed = np.flatnonzero((groups != groups[:, :1]).any(axis=1))
        if mixed.size:
            j = int(mixed[0])
            return [
                Violation(
                    "repeat_groups",
                    f"generation batch {t} ({GATHERED.format(t=t)}) should be groups of G={g} copies of one index, "
                    f"but group {j} holds {groups[j].tolist()}: {shorten(batch)}; the trainer's "
                    f"rewards.view(-1, {g}) then normalises rewards across different samples",
                )
            ]
    return []


@PER_EPOCH.declare(
    Invariant(
        "selected_once",
        "each index in one group an epoch, all but an incomplete generation batch",
        "a generation batch read again as new data (the chunk repeated for each step, trl #3675), or ranks that "
        "select their own samples: some trained on twice an epoch, others never",
        f"{FAMILIES}:GenerationRepeated",
        proven_under="groups",
        promised_by=(REPEATED_GROUPS,),
    )
)
def check_selected_once(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """Each index is read G times or never, and fewer than W x B / G indices (those of the
    incomplete last generation batch) are never read."""
    case = obs.case
    g = case.repeats
    counts = index_counts([obs], case.dataset_size)
    over = np.flatnonzero(counts > g)
    if over.size:
        i = int(over[0])
        return [
            Violation(
                "selected_once",
                f"index {i} is read {int(counts[i])} times in the epoch, where a selected index is read G={g} "
                f"times, in one group; {over.size} indices are selected more than once: {shorten(over)}",
            )
        ]
    per_generation = max(case.world_size * case.batch_size // g, 1)
    never = np.flatnonzero(counts == 0)
    if never.size >= per_generation:
        return [
            Violation(
                "selected_once",
                f"{never.size} of N={case.dataset_size} indices are never read: {shorten(never)}; a generation batch "
                f"selects W x B / G = {per_generation} indices, so only an incomplete one, fewer than "
                f"{per_generation}, may be left out",
            )
        ]
    return []


def _in_range(items: np.ndarray, dataset_size: int) -> np.ndarray:
    return items[(items >= 0) & (items < dataset_size)]  # the others are valid_indices' to charge


@PER_EPOCH.declare(
    Invariant(
        "label_grouped",
        "every batch at least two labels, each at least twice",
        "batches of one label, or a label with one item in a batch: a triplet loss then finds no negative or no "
        "positive and its gradient is zero (sentence-transformers #2920, each label's items chunked in turn; "
        "#4013, a leftover pair meeting its own label at the next round)",
        f"{FAMILIES}:LabelsConcatenated",
        proven_under="labels",
        promised_by=(LABEL_GROUPS,),
    )
)
def check_label_grouped(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """Each batch any rank reads holds at least two labels, each at least twice."""
    assert obs.batches is not None
    labels, n = obs.case.labels(), obs.case.dataset_size
    kinds = int(labels.max(initial=0)) + 1
    for rank, batches in enumerate(obs.batches):
        if not batches:
            continue
        # Each item's (batch, label), counted at once: a rank may read thousands of batches.
        items = obs.indices[rank]
        of_batch = np.repeat(np.arange(len(batches)), [len(batch) for batch in batches])
        valid = (items >= 0) & (items < n)
        counts = np.bincount(of_batch[valid] * kinds + labels[items[valid]], minlength=len(batches) * kinds).reshape(
            len(batches), kinds
        )
        wrong = np.flatnonzero(((counts > 0).sum(axis=1) < 2) | (counts == 1).any(axis=1))
        if wrong.size:
            k = int(wrong[0])
            held = ", ".join(f"label {a} x{int(counts[k, a])}" for a in np.flatnonzero(counts[k]))
            return [
                Violation(
                    "label_grouped",
                    f"rank {rank}'s batch {k}, {shorten(batches[k])}, holds {held or 'no item'}: a batch needs at "
                    f"least two labels, each at least twice, for a triplet loss to find a positive and a "
                    f"negative for every anchor",
                )
            ]
    return []


@PER_EPOCH.declare(
    Invariant(
        "read_once",
        "each index read once an epoch, the last round's padding aside",
        "every rank reading every batch: a batch sampler with no rank given to each rank's DataLoader unsharded, "
        "so each sample is trained on W times an epoch",
        f"{FAMILIES}:EveryRankReadsAll",
        proven_under="labels",
        promised_by=(LABEL_GROUPS,),
    )
)
def check_read_once(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """No index is read twice in an epoch's batches but those of its last round, which may
    repeat earlier ones so that every rank has a batch there (accelerate's even_batches)."""
    assert obs.batches is not None
    rounds = max((len(batches) for batches in obs.batches), default=0)
    before_last = [batch for batches in obs.batches for batch in batches[: rounds - 1]]
    if not before_last:
        return []
    counts = np.bincount(_in_range(np.concatenate(before_last), obs.case.dataset_size))
    twice = np.flatnonzero(counts > 1)
    if not twice.size:
        return []
    i = int(twice[0])
    where = [
        f"rank {rank}'s batch {k}"
        for rank, batches in enumerate(obs.batches)
        for k, batch in enumerate(batches[: rounds - 1])
        if i in batch
    ]
    return [
        Violation(
            "read_once",
            f"index {i} is read {int(counts[i])} times before the epoch's last round ({', '.join(where[:4])}); "
            f"{twice.size} indices are read more than once: {shorten(twice)}",
        )
    ]


@PER_EPOCH.declare(
    Invariant(
        "leftovers_bounded",
        "only what cannot be grouped left out",
        "items left out that could have been grouped: each label cut to half its items (sentence-transformers "
        "#2782), or a whole label never read",
        f"{FAMILIES}:HalfOfEachLabel",
        proven_under="labels",
        promised_by=(LABEL_GROUPS,),
    )
)
def check_leftovers_bounded(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """Of each label but the one with the most items left out, at most one item is left out
    (a label of one item, or the odd one of a label read in pairs), and fewer than W x B
    beyond those: one incomplete round of batches."""
    case = obs.case
    labels = case.labels()
    read = index_counts([obs], case.dataset_size) > 0
    left = np.bincount(labels[~read], minlength=int(labels.max(initial=0)) + 1)
    if not left.any():
        return []
    most = int(np.argmax(left))
    beyond = np.maximum(left - 1, 0)
    beyond[most] = 0
    bound = case.world_size * case.batch_size
    if int(beyond.sum()) < bound:
        return []
    worst = [int(k) for k in np.argsort(-beyond, kind="stable") if beyond[k]][:4]
    return [
        Violation(
            "leftovers_bounded",
            f"{int(left.sum())} of N={case.dataset_size} items are left out of the epoch, "
            + ", ".join(f"label {k}: {int(left[k])} of {int((labels == k).sum())}" for k in [most, *worst])
            + f"; beyond one item a label and the excess of label {most} (the one with the most left), "
            f"{int(beyond.sum())} could have been grouped, where fewer than one round's W x B = {bound} may be left",
        )
    ]


def _batch_portraits(items: np.ndarray, sizes: list[int], aspects: np.ndarray) -> np.ndarray:
    """How many portrait items (aspect bucket 0) each batch of a rank holds, out-of-range
    indices left out (valid_indices charges them)."""
    of_batch = np.repeat(np.arange(len(sizes)), sizes)
    valid = (items >= 0) & (items < aspects.size)
    return np.bincount(of_batch[valid], weights=aspects[items[valid]] == 0, minlength=len(sizes)).astype(np.int64)


@PER_EPOCH.declare(
    Invariant(
        "aspect_grouped",
        "batches of one aspect bucket but the rank's tail",
        "portrait and landscape images batched together before the tail: each batch padded to the largest "
        "height and the largest width, the memory AspectRatioBatchSampler exists to save (a bucket looked up by "
        "the item's position in the rank's share, not by its index), or a tail batch over B",
        f"{FAMILIES}:BucketOfPosition",
        proven_under="aspect_ratio",
        promised_by=(ASPECT_GROUPED,),
    )
)
def check_aspect_grouped(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """Every batch of a rank holds B items of one aspect bucket, but its tail, its last two
    batches: the buckets' leftovers (each fewer than B) cut into batches of B, so at most
    one of them mixes the buckets, and only the last is short."""
    assert obs.batches is not None
    aspects, size = obs.case.aspects(), obs.case.batch_size
    for rank, batches in enumerate(obs.batches):
        if not batches:
            continue
        sizes = [len(batch) for batch in batches]
        portraits = _batch_portraits(obs.indices[rank], sizes, aspects)
        mixed = np.flatnonzero((portraits > 0) & (portraits < np.array(sizes)))
        last = len(batches) - 1
        short = [k for k in range(last) if sizes[k] < size]
        if max(sizes) > size:
            k = int(np.argmax(sizes))
            wrong = f"batch {k} holds {sizes[k]} items, more than batch_size={size}"
        elif short:
            k = short[0]
            wrong = f"batch {k} of {last + 1} holds {sizes[k]} items: only the last may be short of batch_size={size}"
        elif mixed.size and mixed[0] < last - 1:
            k = int(mixed[0])
            wrong = (
                f"batch {k} of {last + 1} mixes {int(portraits[k])} portrait and {sizes[k] - int(portraits[k])} "
                f"landscape items, before the rank's tail (its last two batches)"
            )
        elif mixed.size > 1:
            k = int(mixed[1])
            wrong = f"batches {int(mixed[0])} and {k} of {last + 1} both mix the buckets"
        else:
            continue
        return [
            Violation(
                "aspect_grouped",
                f"rank {rank}'s {wrong}, {shorten(batches[k])}: every batch holds batch_size items of one "
                f"aspect bucket (width < height or not) but the buckets' leftovers, each fewer than "
                f"batch_size, cut into the rank's last two batches, of which at most one mixes them",
            )
        ]
    return []


@PER_EPOCH.declare(
    Invariant(
        "aspect_share",
        "the rank's batches are its padded share",
        "items dropped beyond one short batch, so ranks run different numbers of steps and DDP hangs: each "
        "bucket's leftovers dropped apart under drop_last (mmdet #11114, MultiDataAspectRatioBatchSampler), or a "
        "leftover batch of exactly B dropped (mmdet's AspectRatioBatchSampler)",
        f"{FAMILIES}:DropsEachBucketsTail",
        proven_under="aspect_ratio",
        promised_by=(ASPECT_GROUPED,),
    )
)
def check_aspect_share(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """Each rank's batches together hold its strided share of the order padded from its head,
    ceil(N/W) items (with drop_last, less the fewer than B that fill no batch: a whole number
    of batches, ceil(N/W) // B of them); the ranks together repeat no index beyond the padding."""
    case = obs.case
    # The share is always padded (mmengine's DefaultSampler, round_up=True): drop_last cuts batches, not the share.
    share = contract.expected_length(case.dataset_size, case.world_size, drop_last=False)
    expected = share - share % case.batch_size if case.drop_last else share
    wrong = {rank: items.size for rank, items in enumerate(obs.indices) if items.size != expected}
    if wrong:
        got = ", ".join(f"rank {rank}: {n}" for rank, n in list(wrong.items())[:8])
        rule = (
            f"ceil(N/W)={share} less its remainder by batch_size={case.batch_size}"
            if case.drop_last
            else (f"ceil(N/W)={share}")
        )
        return [
            Violation(
                "aspect_share",
                f"each rank's batches should hold its padded share, {expected} items ({rule}), got {got}",
            )
        ]
    counts = index_counts([obs], case.dataset_size)
    padding = contract.padding_size(case.dataset_size, case.world_size, drop_last=False)
    surplus = int(counts.sum()) - int(np.count_nonzero(counts))
    if surplus <= padding:
        return []
    return [
        Violation(
            "aspect_share",
            f"the ranks together repeat {surplus} items, beyond the {padding} of padding to W x ceil(N/W); "
            f"repeated indices: {shorten(np.flatnonzero(counts > 1))}",
        )
    ]


def judge(
    flag: str,
    observation: Observation[IndexCase],
    contract: SamplerContract,
    one_rank: Observation[IndexCase] | None = None,
) -> list[Violation]:
    """The per-epoch invariant ``flag`` (:data:`PER_EPOCH`) on one reading, as its own test
    judges it: the len_matches_iter tests charge a sampler without ``__len__``."""
    if flag == "len_matches_iter" and observation.lacks_len:
        return [missing_len(contract)]
    return PER_EPOCH[flag].judge(observation, contract, one_rank)


def structural_violations(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """Every per-epoch invariant the contract promises, on an observation of any case: those
    the case does not speak about are left out, and so are those judged against the
    one-rank reading unless it is given. A missing ``__len__`` is not charged here, in
    every test, but once, by :func:`judge` in the len_matches_iter tests."""
    violations: list[Violation] = []
    for per_epoch in PER_EPOCH:
        if not contract.promises(per_epoch.flag) or not per_epoch.applies(obs.case):
            continue
        if per_epoch.against_one_rank and one_rank is None:
            continue
        violations += per_epoch.judge(obs, contract, one_rank)
    return violations
