"""The batch sampler's invariants: one record each (``harness.core.invariants.Invariant``).

Each names the known-bad sampler of ``selftests/corpus/batch_bad.py`` that reproduces the bug
it guards against; ``selftests/test_batches.py`` certifies each and asserts its exact set of
failed invariants. Those judged on one epoch of every rank are declared on their checks
(``checks.ONE_EPOCH``), the others here.
"""

from __future__ import annotations

from sampler_conformance.core.invariants import Invariant, Where

from .checks import BAD, DYNAMIC_BATCHES, ONE_EPOCH


def _declared(flag: str, title: str, guards: str, bad: str, *, under: str = DYNAMIC_BATCHES, **more) -> Invariant:
    return Invariant(flag, title, guards, f"{BAD}:{bad}", proven_under=under, **more)


DECLARED: tuple[Invariant, ...] = (
    _declared(
        "batches_run",
        "the sampler runs without crashing",
        "samplers that raise on an empty dataset, on more ranks than batches, or on an item longer than the budget",
        "RefusesLongItem",
        where=Where.IN_PROCESS,
        judged_from=0,  # an empty epoch can crash too
    ),
    *ONE_EPOCH.invariants,
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
        "poisson_rate",
        "each item drawn at each step with probability sample_rate",
        "the rate split across ranks, or applied to the global dataset instead of the shard: the privacy "
        "guarantee the accountant computes from sample_rate does not hold",
        "RateSplitAcrossRanks",
        under="poisson",
        where=Where.IN_PROCESS,
    ),
)
