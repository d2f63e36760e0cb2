"""The index sampler's invariants: one record each (``harness.core.invariants.Invariant``).

The per-epoch invariants are declared on their checks (``checks.PER_EPOCH``), in a module per
promise imported below in the table's order, with the case fields each fixes and whether it
compares each rank with the one-rank order; the per-epoch tests are generated from that
table (``properties/test_per_epoch.py``, on simulated ranks and in real groups). Those with
a check of their own are declared on it, in ``loader_checks``, ``order_checks``,
``resume_checks`` and ``elastic_checks`` (``DECLARED``). The others, checked by a function
shared with other invariants or in their test's body, are declared here.
"""

from __future__ import annotations

from sampler_conformance.core.invariants import Invariant, Where

# isort: off
# The per-epoch checks enter the table (checks.PER_EPOCH) as their modules are imported: here,
# first and in the table's order, which is the registry's.
from . import length_checks, partition_checks, layout_checks, batch_checks, group_checks, aspect_checks  # noqa: F401

# isort: on
from . import cost_checks, elastic_checks, loader_checks, order_checks, resume_checks
from .checks import ELASTIC_BAD, ELASTIC_UNDER, KNOWN_BAD, MULTIPROCESS_BAD, PER_EPOCH, RESUMABLE_UNDER, RESUME_BAD
from .contracts import (
    ACROSS_PROCESSES,
    DETERMINISTIC,
    ELASTIC,
    RESHUFFLES,
    RESUMABLE,
    SEED_EFFECTIVE,
    TORCH_ARGUMENTS,
    VALID,
)

DECLARED: tuple[Invariant, ...] = (
    *PER_EPOCH.invariants,
    Invariant(
        "deterministic",
        "identical order without set_epoch",
        "global-RNG shuffles, reshuffling on every iter()",
        f"{KNOWN_BAD}:GlobalRNG",
        judged_from=2,  # an order: one item cannot show it
        promised_by=(DETERMINISTIC,),
    ),
    Invariant(
        "reshuffles_on_set_epoch",
        "reshuffle with set_epoch",
        "set_epoch ignored or not forwarded: the same order every epoch",
        f"{KNOWN_BAD}:EpochIgnored",
        judged_from=2,  # an order: one item cannot show it
        promised_by=(RESHUFFLES,),
    ),
    Invariant(
        "seed_effective",
        "seed changes the order",
        "seed ignored",
        f"{KNOWN_BAD}:SeedIgnored",
        where=Where.IN_PROCESS,
        needs=("seed",),
        judged_from=2,  # an order: one item cannot show it
        promised_by=(SEED_EFFECTIVE,),
    ),
    Invariant(
        "validates_arguments",
        "invalid arguments refused",
        "rank >= num_replicas accepted: a job trains on the wrong shard",
        f"{KNOWN_BAD}:NoRankValidation",
        where=Where.IN_PROCESS,
        promised_by=(VALID,),
    ),
    Invariant(
        "edge_sizes",
        "runs without crashing, edge sizes included",
        "crashes (an exception, a hang, a dead rank or process) on empty datasets, N < W, W = 1, or any "
        "other valid case; each crash is charged here once, with the smallest case, and the other "
        "invariants are judged on the cases without one",
        f"{KNOWN_BAD}:CrashesOnEmptyDataset",
        where=Where.IN_PROCESS,
        judged_from=0,  # an empty epoch can crash too
        promised_by=(VALID,),
    ),
    *loader_checks.DECLARED.invariants,
    *order_checks.DECLARED.invariants,
    Invariant(
        "group_defaults",
        "num_replicas/rank default to the process group",
        "num_replicas/rank not taken from the process group when left out",
        f"{MULTIPROCESS_BAD}:DefaultsToSingleRank",
        where=Where.GROUPS,
        promised_by=(ACROSS_PROCESSES,),
    ),
    Invariant(
        "defaults",
        "built with the dataset alone, the contract's defaults",
        "drop-in replacements whose defaults differ (shuffle=False, drop_last=True, another seed), "
        "silently changing jobs that build them as DistributedSampler(dataset)",
        f"{MULTIPROCESS_BAD}:ShuffleOffByDefault",
        where=Where.GROUPS,
        promised_by=(TORCH_ARGUMENTS,),
    ),
    # The resumable extension (docs/resume-and-elastic.md, "The resume protocol"): a state
    # taken after k items of epoch e, loaded into fresh samplers with the same arguments, goes
    # on exactly there.
    *resume_checks.DECLARED.invariants,
    Invariant(
        "resume_at_boundaries",
        "resume at an epoch's start and end",
        "a state taken after an epoch's last item that drops the next epoch, or one taken at its start that "
        "skips or replays",
        f"{RESUME_BAD}:KeepsCountAfterPass",
        proven_under=RESUMABLE_UNDER,
        where=Where.IN_PROCESS,
        promised_by=(
            RESUMABLE,
            ELASTIC,
        ),
    ),
    Invariant(
        "later_epochs_after_resume",
        "later epochs unchanged by a resume",
        "a resume skip re-applied in every later epoch",
        f"{RESUME_BAD}:SkipsEveryEpoch",
        proven_under=RESUMABLE_UNDER,
        where=Where.IN_PROCESS,
        promised_by=(
            RESUMABLE,
            ELASTIC,
        ),
    ),
    Invariant(
        "resumes_compose",
        "two resumes compose",
        "a second resume in one epoch that misaligns: the count restarts at each resume",
        f"{RESUME_BAD}:CountRestartsOnResume",
        proven_under=RESUMABLE_UNDER,
        where=Where.IN_PROCESS,
        promised_by=(
            RESUMABLE,
            ELASTIC,
        ),
    ),
    Invariant(
        "stale_state_refused",
        "a stale state is refused",
        "a state saved under another dataset size, seed, shuffle or drop_last, silently resumed at the wrong items",
        f"{RESUME_BAD}:AcceptsStaleState",
        proven_under=RESUMABLE_UNDER,
        where=Where.IN_PROCESS,
        promised_by=(
            RESUMABLE,
            ELASTIC,
        ),
    ),
    Invariant(
        "resumes_through_loader",
        "resume through StatefulDataLoader",
        "a resume that is right on its own but not through torchdata's StatefulDataLoader, with or without "
        "workers: a state that moves on with the workers' prefetch, or that a short last batch resets, so "
        "the resumed epoch skips or replays batches",
        f"{RESUME_BAD}:LiveStateDict",
        proven_under=RESUMABLE_UNDER,
        where=Where.GROUPS,
        packages=("torchdata",),
        promised_by=(
            RESUMABLE,
            ELASTIC,
        ),
    ),
    Invariant(
        "other_world_size_refused",
        "a state from another world size is refused",
        "a sampler that is not elastic resuming on another number of ranks: shards of a topology that no longer exists",
        f"{RESUME_BAD}:AcceptsOtherWorldSize",
        proven_under=RESUMABLE_UNDER,
        where=Where.IN_PROCESS,
        promised_by=(RESUMABLE,),
    ),
    # The elastic extension (docs/resume-and-elastic.md, "The elastic protocol"): a state
    # saved on W ranks, loaded by every rank of W' ranks, goes on at the epoch's global cursor.
    Invariant(
        "elastic_cursor",
        "an elastic resume continues the global order",
        "a resume on another world size that goes on from another place of the epoch, or in another order: "
        "each new rank skips its old per-rank count, or the rest is re-dealt in another order",
        f"{ELASTIC_BAD}:RestReordered",
        proven_under=ELASTIC_UNDER,
        promised_by=(ELASTIC,),
    ),
    *elastic_checks.DECLARED.invariants,
    Invariant(
        "elastic_hops_compose",
        "world-size changes compose",
        "a second change of world size that misaligns: the state keeps the first world size",
        f"{ELASTIC_BAD}:KeepsFirstWorldSize",
        proven_under=ELASTIC_UNDER,
        promised_by=(ELASTIC,),
    ),
    *cost_checks.DECLARED.invariants,
)
