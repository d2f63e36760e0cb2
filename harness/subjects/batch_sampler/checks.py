"""The batch sampler's checks: each reads the ranks' batches (``runs.PlannedEpoch``) and
returns the violations of its invariant, worded for the user."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from sampler_conformance.core.case import NoLen
from sampler_conformance.core.comparing import first_difference
from sampler_conformance.core.counting import check_reported_lengths, unequal_counts
from sampler_conformance.core.evidence import Violation, shorten
from sampler_conformance.core.frequencies import FrequencyVerdict, rate_test
from sampler_conformance.core.invariants import Declared, Invariant, OneEpoch, Where

from .contracts import (
    BATCHES_RUN,
    EACH_ITEM_ONCE,
    EQUAL_BATCH_COUNTS,
    POISSON_DRAWS,
    REPRODUCIBLE_PLAN,
    WITHIN_BUDGET,
    BatchContract,
)
from .plug import BatchPlug
from .runs import PlannedEpoch

# The Poisson rate test pools epochs until every item had this many steps to be drawn at, or
# reads this many epochs (docs/batch-samplers.md: what that catches at the certification's budget).
RATE_STEPS = 4096
MAX_RATE_EPOCHS = 1024


def rate_epochs(steps: int) -> int:
    """The epochs the rate test reads of a case whose ranks each run ``steps`` steps an epoch."""
    return min(MAX_RATE_EPOCHS, -(-RATE_STEPS // steps))


BAD = "selftests.corpus.batch_bad"  # the known-bad samplers that prove the checks can fail
DYNAMIC_BATCHES = "dynamic_batches"

# What one epoch shows, each invariant declared on its check below (the contract decides which
# apply): the tests are generated from it (properties/test_batches.py, test_batch_epoch, on
# simulated ranks and in real groups). A check that needs less than the plan, the plug and the
# contract leaves the rest None.
ONE_EPOCH: OneEpoch[Callable[[PlannedEpoch, BatchPlug, BatchContract], list[Violation]]] = OneEpoch()
# The others checked here, each by a check of its own.
DECLARED = Declared()


@ONE_EPOCH.declare(
    Invariant(
        "batch_items",
        "batches are lists of int indices in range(N)",
        "batches of tensors or floats, indices outside the dataset, and empty batches where the contract has "
        "none (a bucket flushed empty: a step with nothing to train on)",
        f"{BAD}:EmptyBucketFlushed",
        proven_under=DYNAMIC_BATCHES,
        promised_by=(BATCHES_RUN,),
    )
)
def check_batch_items(epoch: PlannedEpoch, plug: BatchPlug | None, contract: BatchContract) -> list[Violation]:
    size = epoch.case.dataset_size
    for rank, batches in enumerate(epoch.batches):
        for step, batch in enumerate(batches):
            outside = batch[(batch < 0) | (batch >= size)]
            if outside.size:
                return [
                    Violation(
                        "batch_items", f"rank {rank}'s batch {step} holds {shorten(outside)}, outside range(N={size})"
                    )
                ]
            if not batch.size and not contract.empty_batches:
                return [
                    Violation(
                        "batch_items",
                        f"rank {rank}'s batch {step} is empty: a step with nothing to train on, which a collate "
                        f"function or a loss over the batch may refuse",
                    )
                ]
    return []


@ONE_EPOCH.declare(
    Invariant(
        "equal_batch_counts",
        "every rank yields the same number of batches per epoch",
        "global batches dealt round robin with no care for the last round, or empty Poisson batches skipped: the "
        "rank with one batch more waits forever in the gradient all-reduce (lhotse-speech/lhotse #646 and #1277, "
        "NVIDIA/Megatron-LM #7299, opacus' DistributedUniformWithReplacementSampler)",
        f"{BAD}:UnevenRoundRobin",
        proven_under=DYNAMIC_BATCHES,
        promised_by=(EQUAL_BATCH_COUNTS,),
    )
)
def check_equal_counts(
    epoch: PlannedEpoch, plug: BatchPlug | None = None, contract: BatchContract | None = None
) -> list[Violation]:
    return unequal_counts("equal_batch_counts", epoch.batch_counts)


@DECLARED(
    Invariant(
        "batch_len_matches",
        "len() counts the batches the rank yields",
        "len() counting the global plan's batches, or items, so that a scheduler or a progress bar plans the "
        "wrong number of steps (pytorch/audio #3068, pytorch/vision #9127)",
        f"{BAD}:LenOfGlobalPlan",
        proven_under=DYNAMIC_BATCHES,
        where=Where.BOTH,  # in groups for a sampler that rebalances inside one (needs_process_group)
        promised_by=(BATCHES_RUN,),
    )
)
def check_len(epoch: PlannedEpoch, contract: BatchContract) -> list[Violation]:
    """len(), before and after the pass, counts the batches each rank yielded; a sampler
    without ``__len__`` fails only where the contract requires one."""
    if NoLen.UNDEFINED in epoch.observation.reported_lengths and contract.requires_len:
        return [
            Violation(
                "batch_len_matches",
                f"the sampler has no __len__, which the {contract.name} contract promises: the accountant "
                f"and the scheduler plan the epoch's steps from it",
                every_case=True,
            )
        ]
    return check_reported_lengths(
        epoch.observation, "batch_len_matches", "len() says {said}, but it yielded {yielded}", ("batch", "batches")
    )


@ONE_EPOCH.declare(
    Invariant(
        "within_budget",
        "every batch within max_tokens (an item over it alone)",
        "a batch closed only after it overflowed, or a cost other than the one declared (the longest item times "
        "the count, for padded batches): out-of-memory on the step that draws it",
        f"{BAD}:ClosesAfterOverflow",
        proven_under=DYNAMIC_BATCHES,
        promised_by=(WITHIN_BUDGET,),
    )
)
def check_within_budget(epoch: PlannedEpoch, plug: BatchPlug, contract: BatchContract | None = None) -> list[Violation]:
    lengths = np.asarray(epoch.case.lengths, dtype=np.int64)
    budget = epoch.case.max_tokens
    size = lengths.size
    for rank, batches in enumerate(epoch.batches):
        for step, batch in enumerate(batches):
            batch = batch[(batch >= 0) & (batch < size)]  # outside range(N): batch_items'
            cost = plug.batch_costs(lengths, batch)
            if cost <= budget or batch.size == 1:  # an item over the budget, alone: the documented rule
                continue
            over = batch[lengths[batch] > budget]
            if over.size:
                why = (
                    f"item {int(over[0])} is longer than the budget itself ({int(lengths[over[0]])}) and must go alone"
                )
            else:
                why = f"its {plug.cost} cost is {cost}"
            return [
                Violation(
                    "within_budget",
                    f"rank {rank}'s batch {step}, {shorten(batch)} of lengths {shorten(lengths[batch])}, exceeds "
                    f"max_tokens={budget}: {why}",
                )
            ]
    return []


def padding_wasted(epoch: PlannedEpoch) -> list[float]:
    """Per non-empty batch, the share of its padded size (longest item times count) that is
    padding: what bucketing saves. A measurement, not an invariant."""
    lengths = np.asarray(epoch.case.lengths, dtype=np.int64)
    wasted = []
    for batches in epoch.batches:
        for batch in batches:
            taken = lengths[batch[(batch >= 0) & (batch < lengths.size)]]
            if taken.size:
                wasted.append(1.0 - float(taken.sum()) / (float(taken.max()) * taken.size))
    return wasted


@ONE_EPOCH.declare(
    Invariant(
        "each_item_once",
        "each item at most once per epoch, only an incomplete last round left out",
        "the last round padded with batches repeated from the start (DistributedSampler's padding applied to a "
        "batch plan), which trains twice on them and inflates evaluation; or items dropped beyond the last round "
        "(under a budget, more than W - 1 batches hold; in steps of batch_size, a whole step)",
        f"{BAD}:PadsByRepeating",
        proven_under=DYNAMIC_BATCHES,
        promised_by=(EACH_ITEM_ONCE,),
    )
)
def check_each_item_once(
    epoch: PlannedEpoch, plug: BatchPlug | None = None, contract: BatchContract | None = None
) -> list[Violation]:
    """No item twice across ranks; those never yielded fit in what an incomplete last round
    may drop: under a budget, W - 1 batches (their lengths, each counted at most the budget,
    add up to at most (W - 1) x max_tokens); under a step's size, fewer than batch_size items."""
    case = epoch.case
    size = case.dataset_size
    drawn = np.concatenate(epoch.observation.indices) if epoch.observation.indices else np.empty(0, np.int64)
    drawn = drawn[(drawn >= 0) & (drawn < size)]
    counts = np.bincount(drawn, minlength=size)
    twice = np.flatnonzero(counts > 1)
    if twice.size:
        return [
            Violation(
                "each_item_once",
                f"{twice.size} item(s) yielded more than once in the epoch, {shorten(twice)} (item {int(twice[0])} "
                f"{int(counts[twice[0]])} times): trained on twice, and counted twice in an evaluation",
            )
        ]
    missing = np.flatnonzero(counts == 0)
    if case.batch_size:
        if missing.size < case.batch_size:
            return []
        return [
            Violation(
                "each_item_once",
                f"{missing.size} item(s) never yielded, {shorten(missing)}: an incomplete last step holds fewer "
                f"than batch_size={case.batch_size}, so a whole step's worth was dropped",
            )
        ]
    lengths = np.asarray(case.lengths, dtype=np.int64)
    left_out = int(np.minimum(lengths[missing], case.max_tokens).sum()) if missing.size else 0
    allowed = (case.world_size - 1) * case.max_tokens
    if left_out > allowed:
        return [
            Violation(
                "each_item_once",
                f"{missing.size} item(s) never yielded, {shorten(missing)}, of total length {left_out} (each counted "
                f"at most max_tokens): more than the {case.world_size - 1} batch(es) of an incomplete last round "
                f"could hold ({allowed})",
            )
        ]
    return []


def check_same_plan(first: PlannedEpoch, second: PlannedEpoch, flag: str, what: str) -> list[Violation]:
    for rank, (a, b) in enumerate(zip(first.batches, second.batches, strict=True)):
        if not _same_batches(a, b):
            return [Violation(flag, f"{what}: on rank {rank}, {first_difference(a, b, 'batch')}")]
    return []


def check_plans_differ(first: PlannedEpoch, second: PlannedEpoch, flag: str, what: str) -> list[Violation]:
    pairs = zip(first.batches, second.batches, strict=True)
    if all(_same_batches(a, b) for a, b in pairs):
        shown = ", ".join(shorten(batch) for batch in first.batches[0][:3])
        return [Violation(flag, f"{what}: every rank yielded the same batches, rank 0's beginning {shown}")]
    return []


@DECLARED(
    Invariant(
        "batch_plan_agrees",
        "every process plans the same batches",
        "a plan built from a generator that differs between processes (numpy's global one, seeded by the OS), "
        "cached once per process: ranks in one process agree, ranks in a job do not (pytorch/audio #3068, "
        "huggingface/transformers #9574)",
        f"{BAD}:PlanCachedPerProcess",
        proven_under=DYNAMIC_BATCHES,
        where=Where.GROUPS,
        judged_from=2,  # an order: one item cannot show it
        promised_by=(REPRODUCIBLE_PLAN,),
    )
)
def check_processes_agree(epoch: PlannedEpoch, as_rank: int) -> list[Violation]:
    """Every process built rank ``as_rank``'s sampler for the same case: all must plan alike."""
    plans = epoch.batches
    for process, plan in enumerate(plans[1:], start=1):
        if not _same_batches(plans[0], plan):
            where = first_difference(plans[0], plan, "batch", ("rank 0's process", f"rank {process}'s"))
            return [
                Violation(
                    "batch_plan_agrees",
                    f"the processes of ranks 0 and {process} each built rank {as_rank}'s sampler for the same case, and "
                    f"planned different batches ({len(plans[0])} and {len(plan)} batches; {where}): in a job each "
                    f"rank takes its part of a plan the others do not share, so items are lost, repeated, or the "
                    f"ranks run unequal steps",
                )
            ]
    return []


@ONE_EPOCH.declare(
    Invariant(
        "poisson_shards_disjoint",
        "no item drawn by two ranks in one epoch",
        "a sampler that is not sharded (opacus' UniformWithReplacementSampler under DDP): every rank draws from the "
        "whole dataset, and the privacy accounting's sampling rate is W times too low",
        f"{BAD}:PoissonNotSharded",
        proven_under="poisson",
        promised_by=(POISSON_DRAWS,),
    )
)
def check_shards_disjoint(
    epoch: PlannedEpoch, plug: BatchPlug | None = None, contract: BatchContract | None = None
) -> list[Violation]:
    owner: dict[int, int] = {}
    for rank, drawn in enumerate(epoch.observation.indices):
        for item in np.unique(drawn).tolist():
            if owner.setdefault(item, rank) != rank:
                return [
                    Violation(
                        "poisson_shards_disjoint",
                        f"item {item} was drawn by rank {owner[item]} and by rank {rank} in the same epoch: the ranks "
                        f"do not draw from disjoint shards",
                    )
                ]
    return []


def poisson_steps(epoch: PlannedEpoch) -> int | None:
    """The steps every rank ran in ``epoch``: the ranks' common len() (an empty batch skipped
    is still a step of the plan), else their common count of batches; None if they differ."""
    lengths = set(epoch.observation.reported_lengths)
    if len(lengths) == 1:
        (length,) = lengths
        if isinstance(length, int):
            return length
    counts = set(epoch.batch_counts)
    return counts.pop() if len(counts) == 1 else None


@DECLARED(
    Invariant(
        "poisson_rate",
        "each item drawn at each step with probability sample_rate",
        "the rate split across ranks, or applied to the global dataset instead of the shard: the privacy "
        "guarantee the accountant computes from sample_rate does not hold",
        f"{BAD}:RateSplitAcrossRanks",
        proven_under="poisson",
        where=Where.IN_PROCESS,
        promised_by=(POISSON_DRAWS,),
    )
)
def check_poisson_rate(
    epochs: Sequence[PlannedEpoch], steps: int, alpha: float
) -> tuple[list[Violation], FrequencyVerdict]:
    """Each item's draws over ``epochs`` (``steps`` steps in all) against Binomial(steps,
    sample_rate), at false-alarm rate ``alpha`` (``harness.core.frequencies.rate_test``)."""
    case = epochs[0].case
    size = case.dataset_size
    counts = np.zeros(size, dtype=np.int64)
    for epoch in epochs:
        for drawn in epoch.observation.indices:
            counts += np.bincount(drawn[(drawn >= 0) & (drawn < size)], minlength=size)
    verdict = rate_test(counts, steps, case.sample_rate, alpha)
    if not verdict.fails:
        return [], verdict
    return [
        Violation("poisson_rate", f"the items are not drawn at sample_rate={case.sample_rate}: {verdict.describe()}")
    ], verdict


def _same_batches(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
