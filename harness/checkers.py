"""The invariants, as pure functions over what the ranks yielded.

Each checker takes :class:`Observation` objects and returns a list of
:class:`Violation` (empty when the invariant holds). They are vectorised with numpy so
that checking ten million indices costs less than producing them, and they are the only
implementation: the in-process properties and the real process groups both call them.
"""

from __future__ import annotations

import numpy as np

from .case import Observation
from .contracts import Contract
from .verdict import Violation, shorten

# Below this many items two random orders may coincide by chance (1/10! for a full
# permutation of 10), so "the order changed" is only asserted from here on.
MIN_ITEMS_FOR_DISTINCT_ORDERS = 10


def check_len_matches_iter(obs: Observation) -> list[Violation]:
    return [
        Violation("len_matches_iter", f"rank {rank}: len(sampler) is {reported}, but one iteration yielded {got} indices")
        for rank, (reported, got) in enumerate(zip(obs.reported_lengths, obs.lengths))
        if reported != got
    ]


def check_equal_length(obs: Observation, contract: Contract) -> list[Violation]:
    case = obs.case
    expected = contract.expected_length(case.dataset_size, case.world_size, case.drop_last)
    rule = "floor(N/W) with drop_last" if case.drop_last else "ceil(N/W)"
    wrong = {rank: n for rank, n in enumerate(obs.lengths) if n != expected}
    if not wrong:
        return []
    got = ", ".join(f"rank {rank}: {n}" for rank, n in list(wrong.items())[:8])
    uneven = " Ranks that yield different counts run different numbers of steps, and DDP hangs." if len(set(obs.lengths)) > 1 else ""
    return [Violation("equal_length", f"every rank should yield {expected} indices ({rule}), got {got}.{uneven}")]


def check_valid_indices(obs: Observation) -> list[Violation]:
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
    return violations


def _counts(obs: Observation) -> np.ndarray:
    n = obs.case.dataset_size
    everything = np.concatenate(obs.indices) if obs.indices else np.empty(0, dtype=np.int64)
    everything = everything[(everything >= 0) & (everything < n)]
    return np.bincount(everything, minlength=n)


def check_coverage(obs: Observation) -> list[Violation]:
    """Without drop_last the union is range(N); with drop_last, or W | N, ranks are disjoint."""
    case = obs.case
    counts = _counts(obs)
    violations = []
    if not case.drop_last:
        missing = np.flatnonzero(counts == 0)
        if missing.size:
            violations.append(
                Violation(
                    "covers",
                    f"without drop_last the ranks together must cover range(N) = range({case.dataset_size}); "
                    f"{missing.size} indices are never yielded: {shorten(missing)}",
                )
            )
    if case.drop_last or case.dataset_size % case.world_size == 0:
        repeated = np.flatnonzero(counts > 1)
        if repeated.size:
            why = "drop_last is set" if case.drop_last else f"W={case.world_size} divides N={case.dataset_size}"
            first = int(repeated[0])
            holders = [rank for rank, indices in enumerate(obs.indices) if np.any(indices == first)]
            violations.append(
                Violation(
                    "covers",
                    f"ranks must not share indices when {why} (no padding is needed); {repeated.size} indices "
                    f"are yielded more than once: {shorten(repeated)}; index {first} comes from ranks {holders}",
                )
            )
    return violations


def _unequal_lengths(flag: str, obs: Observation) -> Violation:
    return Violation(flag, f"ranks yield different numbers of indices {list(obs.lengths)}, so they do not form one global order")


def check_pads_from_head(obs: Observation) -> list[Violation]:
    """Q[N:] repeats the head of Q cyclically (padding = P + P[:pad], or P repeated)."""
    order = obs.global_order()
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


def check_strided(obs: Observation, single_rank: Observation) -> list[Violation]:
    """Rank r yields Q[r::W], Q being the one-rank order (num_replicas=1) padded from its head.

    The one-rank order must be a permutation of range(N): that is the order P every rank
    of a DistributedSampler-compatible sampler derives its share from.
    """
    n = obs.case.dataset_size
    reference = single_rank.indices[0]
    if reference.size != n or not np.array_equal(np.sort(reference), np.arange(n)):
        return [
            Violation(
                "strided",
                f"with num_replicas=1 the sampler should yield a permutation of range({n}), "
                f"got {reference.size} indices: {shorten(reference)}",
            )
        ]
    world = obs.case.world_size
    per_rank = max(obs.lengths) if obs.indices else 0
    total = per_rank * world
    global_order = np.resize(reference, total) if n else np.empty(0, dtype=np.int64)
    for rank, indices in enumerate(obs.indices):
        expected = global_order[rank::world]
        if not np.array_equal(indices, expected):
            return [
                Violation(
                    "strided",
                    f"rank {rank} should yield Q[{rank}::{world}] = {shorten(expected)}, where Q is the order "
                    f"one rank gets with num_replicas=1 ({shorten(reference)}) padded from its head; "
                    f"got {shorten(indices)}",
                )
            ]
    return []


def check_unshuffled_in_order(obs: Observation) -> list[Violation]:
    """With shuffle=False the global order starts with range(N) in order."""
    order = obs.global_order()
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


def check_same_indices(first: Observation, second: Observation, flag: str, what: str) -> list[Violation]:
    for rank, (a, b) in enumerate(zip(first.indices, second.indices)):
        if not np.array_equal(a, b):
            return [Violation(flag, f"{what}: rank {rank} first yielded {shorten(a)}, then {shorten(b)}")]
    return []


def check_orders_differ(first: Observation, second: Observation, flag: str, what: str) -> list[Violation]:
    a, b = first.global_order(), second.global_order()
    if a is None or b is None or a.size < MIN_ITEMS_FOR_DISTINCT_ORDERS:
        return []
    if np.array_equal(a, b):
        return [Violation(flag, f"{what}, but both gave the same global order {shorten(a)}")]
    return []


def check_equal_batch_counts(batch_counts: list[int], batch_lengths: list[int]) -> list[Violation]:
    violations = []
    if len(set(batch_counts)) > 1:
        violations.append(
            Violation(
                "equal_batches",
                f"ranks get different numbers of batches {batch_counts}: the rank with more batches "
                f"waits in a collective the others never join, and DDP hangs",
            )
        )
    if len(set(batch_lengths)) > 1:
        violations.append(
            Violation("equal_batches", f"len(BatchSampler) differs across ranks: {batch_lengths}")
        )
    return violations


def structural_violations(obs: Observation, contract: Contract) -> list[Violation]:
    """The per-epoch invariants every observation must satisfy under ``contract``."""
    checks = (
        ("len_matches_iter", check_len_matches_iter),
        ("equal_length", lambda o: check_equal_length(o, contract)),
        ("valid_indices", check_valid_indices),
        ("covers", check_coverage),
        ("pads_from_head", lambda o: [] if o.case.drop_last else check_pads_from_head(o)),
        ("unshuffled_in_order", lambda o: [] if o.case.shuffle else check_unshuffled_in_order(o)),
    )
    violations: list[Violation] = []
    for flag, check in checks:
        if contract.promises(flag):
            violations.extend(check(obs))
    return violations
