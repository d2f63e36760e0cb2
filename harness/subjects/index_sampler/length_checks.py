"""The per-epoch invariants of each rank's length: len() matches what a pass yields
(``finite_epochs``), every rank yields the length rule's count (``padded_epochs``,
``truncated_epochs``), and an exact partition's lengths sum to N and differ by at most one
(``exact_partition``). Each is declared on its check in the per-epoch table (``checks.PER_EPOCH``).
"""

from __future__ import annotations

from sampler_conformance.core.case import Observation
from sampler_conformance.core.counting import check_reported_lengths
from sampler_conformance.core.evidence import Violation, counted
from sampler_conformance.core.invariants import Invariant

from .case import IndexCase
from .checks import FAMILIES, KNOWN_BAD, PER_EPOCH
from .contracts import EXACT_PARTITION, FINITE_EPOCHS, PADDED_EPOCHS, TRUNCATED_EPOCHS, SamplerContract


@PER_EPOCH.declare(
    Invariant(
        "len_matches_iter",
        "len() matches iteration",
        "__len__ disagreeing with iteration (wrong step counts, LR schedules)",
        f"{KNOWN_BAD}:LenIgnoresDropLast",
        promised_by=(FINITE_EPOCHS,),
    ),
    partial=True,
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


@PER_EPOCH.declare(
    Invariant(
        "equal_length",
        "equal per-rank lengths",
        "one rank running one step more than the others: DDP hangs",
        f"{KNOWN_BAD}:FloorNotCeil",
        promised_by=(PADDED_EPOCHS, TRUNCATED_EPOCHS),
    ),
    partial=True,
)
def check_equal_length(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    case = obs.case
    expected = contract.expected_length(case.dataset_size, case.world_size, case.drop_last)
    rule = contract.length_words(case.drop_last)
    wrong = {obs.rank_of(position): n for position, n in enumerate(obs.lengths) if n != expected}
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
