"""The order invariants across passes, epochs, seeds and processes, as pure functions: the
same order again, a new order after set_epoch or another seed, the same order in every rank's
process."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sampler_conformance.core.case import Observation
from sampler_conformance.core.comparing import first_difference
from sampler_conformance.core.evidence import Violation, shorten
from sampler_conformance.core.invariants import Declared, Invariant, Where

from .case import IndexCase
from .checks import MULTIPROCESS_BAD
from .contracts import ACROSS_PROCESSES, SamplerContract

# The invariants checked here, each by a check of its own (harness.core.invariants.Declared).
DECLARED = Declared()

# Below this many distinct items two random orders may coincide by chance (1/10! for a full
# permutation of 10), so "the order changed" is only asserted from here on, and the
# reshuffle and seed tests of both runners draw datasets at least this large.
MIN_COMPARABLE_ITEMS = 10
# A label-grouped order is drawn from far fewer orders of as many items (the items go in
# pairs, a label's pairs in turn, the labels in rounds), so it is compared from more of them:
# 24 items are 12 pairs of at most 8 labels, so some label reads two pairs or more.
MIN_COMPARABLE_LABELLED_ITEMS = 24


def least_comparable(contract: SamplerContract) -> int:
    """The fewest distinct items whose orders under ``contract`` are compared."""
    return MIN_COMPARABLE_LABELLED_ITEMS if contract.labels else MIN_COMPARABLE_ITEMS


def orders_comparable(observation: Observation[IndexCase], contract: SamplerContract) -> bool:
    """Enough distinct items (padding repeats some) that two orders cannot coincide by
    chance: below that, "the order changed" judges nothing, and a test rejects the example
    rather than count it."""
    return np.unique(np.concatenate(observation.indices or [[]])).size >= least_comparable(contract)


def check_orders_differ(
    first: Observation[IndexCase], second: Observation[IndexCase], flag: str, what: str
) -> list[Violation]:
    # The ranks' shares one after another: defined whatever the layout or lengths.
    a, b = np.concatenate(first.indices or [[]]), np.concatenate(second.indices or [[]])
    if a.size < MIN_COMPARABLE_ITEMS:
        return []
    if np.array_equal(a, b):
        return [
            Violation(flag, f"{what}, but both gave the same indices on every rank: {shorten(a)} (ranks concatenated)")
        ]
    return []


PER_PROCESS_STATE = "the order depends on per-process state"


@DECLARED(
    Invariant(
        "agrees_across_ranks",
        "ranks agree on one global order",
        "per-process shuffles (hash() of a str, unseeded RNGs): ranks overlap and miss items",
        f"{MULTIPROCESS_BAD}:HashSeededShuffle",
        where=Where.GROUPS,
        judged_from=2,  # an order: one item cannot show it
        promised_by=(ACROSS_PROCESSES,),
    )
)
def check_ranks_agree(
    single_rank_orders: Sequence[Observation[IndexCase]], why: str = PER_PROCESS_STATE
) -> list[Violation]:
    """Built with num_replicas=1 in each rank's own process, every rank yields the same order.

    Ranks that derive their order from per-process state (Python's hash() of a str, an
    unseeded RNG, global RNGs that drifted apart) disagree, and their shares of "the" order
    overlap and miss items. ``why`` says what made the processes differ.
    """
    reference = single_rank_orders[0].indices[0]
    for rank, obs in enumerate(single_rank_orders[1:], start=1):
        order = obs.indices[0]
        if not np.array_equal(order, reference):
            built = "built with num_replicas=1, rank=0 in each rank's process for the same (seed, epoch)"
            where = first_difference(reference, order, readings=("rank 0's", f"rank {rank}'s"))
            said = f"rank 0 yields {shorten(reference)} but rank {rank} yields {shorten(order)} ({where})"
            if _each_took_its_share_of_the_group(single_rank_orders):
                return [
                    Violation(
                        "agrees_across_ranks",
                        f"{built}, {said}: each process yielded fewer than the N={obs.case.dataset_size} items asked "
                        f"for, and together they hold every index, so each read its own share of the group of "
                        f"{len(single_rank_orders)}: the sampler takes its rank and world size from the process "
                        f"group, not from the num_replicas and rank it is given",
                    )
                ]
            return [
                Violation("agrees_across_ranks", f"{built}, {said}: {why}, so the ranks' shares overlap and miss items")
            ]
    return []


def _each_took_its_share_of_the_group(single_rank_orders: Sequence[Observation[IndexCase]]) -> bool:
    """Asked for the whole one-rank order, each process yielded less than N items, and
    together they hold every index, no more than W - 1 of them twice (the padding): what a
    sampler that reads its rank from the group yields."""
    orders = [obs.indices[0] for obs in single_rank_orders]
    n = single_rank_orders[0].case.dataset_size
    held = np.unique(np.concatenate(orders))
    return (
        all(order.size < n for order in orders)
        and sum(order.size for order in orders) < n + len(orders)
        and np.array_equal(held, np.arange(n))
    )


def missing_set_epoch(case: IndexCase) -> Violation:
    """The one violation a sampler without set_epoch gets: where the contract promises reshuffling."""
    return Violation(
        "reshuffles_on_set_epoch",
        f"the sampler has no set_epoch() method, so set_epoch({case.epoch}) could not be called; training "
        f"loops call it every epoch to reshuffle, and without it every epoch repeats the first one's order",
    )
