"""The batch sampler's invariants: one record each (``harness.core.invariants.Invariant``).

Each names the known-bad sampler of ``selftests/corpus/batch_bad.py`` that reproduces the bug
it guards against; ``selftests/test_batches.py`` certifies each and asserts its exact set of
failed invariants.
"""

from __future__ import annotations

from sampler_conformance.core.invariants import Invariant, Where

_BAD = "selftests.corpus.batch_bad"


def _declared(flag: str, title: str, guards: str, bad: str, *, under: str = "dynamic_batches", **more) -> Invariant:
    return Invariant(flag, title, guards, f"{_BAD}:{bad}", proven_under=under, **more)


DECLARED: tuple[Invariant, ...] = (
    _declared(
        "batches_run",
        "the sampler runs without crashing",
        "samplers that raise on an empty dataset, on more ranks than batches, or on an item longer than the budget",
        "RefusesLongItem",
        where=Where.IN_PROCESS,
        judged_from=0,  # an empty epoch can crash too
    ),
    _declared(
        "batch_items",
        "batches are lists of int indices in range(N)",
        "batches of tensors or floats, indices outside the dataset, and empty batches where the contract has "
        "none (a bucket flushed empty: a step with nothing to train on)",
        "EmptyBucketFlushed",
    ),
    _declared(
        "equal_batch_counts",
        "every rank yields the same number of batches per epoch",
        "global batches dealt round robin with no care for the last round, or empty Poisson batches skipped: the "
        "rank with one batch more waits forever in the gradient all-reduce (lhotse-speech/lhotse #646 and #1277, "
        "NVIDIA/Megatron-LM #7299, opacus' DistributedUniformWithReplacementSampler)",
        "UnevenRoundRobin",
    ),
    _declared(
        "batch_len_matches",
        "len() counts the batches the rank yields",
        "len() counting the global plan's batches, or items, so that a scheduler or a progress bar plans the "
        "wrong number of steps (pytorch/audio #3068, pytorch/vision #9127)",
        "LenOfGlobalPlan",
        where=Where.IN_PROCESS,
    ),
    _declared(
        "batches_deterministic",
        "the same batches for the same seed and epoch",
        "a generator made once and carried over from epoch to epoch, so that a run resumed at epoch e, or the "
        "script run again, plans other batches",
        "GeneratorCarriedOver",
        needs=("seed",),
        where=Where.IN_PROCESS,
        judged_from=2,  # an order: one item cannot show it
    ),
    _declared(
        "batches_reshuffle",
        "other batches after set_epoch",
        "the epoch never reaching the sampler's generator: every epoch the same batches in the same order",
        "EpochIgnored",
        where=Where.IN_PROCESS,
        judged_from=2,  # an order: one item cannot show it
    ),
    _declared(
        "batch_plan_agrees",
        "every process plans the same batches",
        "a plan built from a generator that differs between processes (numpy's global one, seeded by the OS), "
        "cached once per process: ranks in one process agree, ranks in a job do not (pytorch/audio #3068, "
        "huggingface/transformers #9574)",
        "PlanCachedPerProcess",
        where=Where.GROUPS,
        judged_from=2,  # an order: one item cannot show it
    ),
    _declared(
        "within_budget",
        "every batch within max_tokens (an item over it alone)",
        "a batch closed only after it overflowed, or a cost other than the one declared (the longest item times "
        "the count, for padded batches): out-of-memory on the step that draws it",
        "ClosesAfterOverflow",
    ),
    _declared(
        "each_item_once",
        "each item at most once per epoch, only an incomplete last round left out",
        "the last round padded with batches repeated from the start (DistributedSampler's padding applied to a "
        "batch plan), which trains twice on them and inflates evaluation; or items dropped beyond the last round "
        "(under a budget, more than W - 1 batches hold; in steps of batch_size, a whole step)",
        "PadsByRepeating",
    ),
    _declared(
        "poisson_shards_disjoint",
        "no item drawn by two ranks in one epoch",
        "a sampler that is not sharded (opacus' UniformWithReplacementSampler under DDP): every rank draws from the "
        "whole dataset, and the privacy accounting's sampling rate is W times too low",
        "PoissonNotSharded",
        under="poisson",
    ),
    _declared(
        "poisson_rate",
        "each item drawn at each step with probability sample_rate",
        "the rate split across ranks, or applied to the global dataset instead of the shard: the privacy "
        "guarantee the accountant computes from sample_rate does not hold",
        "RateSplitAcrossRanks",
        under="poisson",
        where=Where.IN_PROCESS,
    ),
)
