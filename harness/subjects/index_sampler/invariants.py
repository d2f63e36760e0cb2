"""The index sampler's invariants: one record each (``harness.core.invariants.Invariant``).

The per-epoch invariants are declared on their checks (``checks.PER_EPOCH``), with the case
fields each fixes and whether it compares each rank with the one-rank order; the per-epoch
tests are generated from that table (``properties/test_per_epoch.py``, on simulated ranks and
in real groups). The others are declared here, in the registry's order after those.
"""

from __future__ import annotations

from sampler_conformance.core.invariants import Invariant, Where

from .checks import KNOWN_BAD, PER_EPOCH

_MULTIPROCESS_BAD = "selftests.corpus.multiprocess_bad"
_RESUME_BAD = "selftests.corpus.resume_bad"
_RESUMABLE = "torch+resumable"
_ELASTIC_BAD = "selftests.corpus.elastic_bad"
_ELASTIC = "torch+elastic"

DECLARED: tuple[Invariant, ...] = (
    *PER_EPOCH.invariants,
    Invariant(
        "deterministic",
        "identical order without set_epoch",
        "global-RNG shuffles, reshuffling on every iter()",
        f"{KNOWN_BAD}:GlobalRNG",
        judged_from=2,  # an order: one item cannot show it
    ),
    Invariant(
        "reshuffles_on_set_epoch",
        "reshuffle with set_epoch",
        "set_epoch ignored or not forwarded: the same order every epoch",
        f"{KNOWN_BAD}:EpochIgnored",
        judged_from=2,  # an order: one item cannot show it
    ),
    Invariant(
        "seed_effective",
        "seed changes the order",
        "seed ignored",
        f"{KNOWN_BAD}:SeedIgnored",
        where=Where.IN_PROCESS,
        needs=("seed",),
        judged_from=2,  # an order: one item cannot show it
    ),
    Invariant(
        "validates_arguments",
        "invalid arguments refused",
        "rank >= num_replicas accepted: a job trains on the wrong shard",
        f"{KNOWN_BAD}:NoRankValidation",
        where=Where.IN_PROCESS,
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
    ),
    Invariant(
        "equal_batches",
        "equal batch counts",
        "uneven batch counts per rank: DDP hangs",
        f"{KNOWN_BAD}:UnpaddedStrided",
    ),
    Invariant(
        "agrees_across_ranks",
        "ranks agree on one global order",
        "per-process shuffles (hash() of a str, unseeded RNGs): ranks overlap and miss items",
        f"{_MULTIPROCESS_BAD}:HashSeededShuffle",
        where=Where.GROUPS,
        judged_from=2,  # an order: one item cannot show it
    ),
    Invariant(
        "group_defaults",
        "num_replicas/rank default to the process group",
        "num_replicas/rank not taken from the process group when left out",
        f"{_MULTIPROCESS_BAD}:DefaultsToSingleRank",
        where=Where.GROUPS,
    ),
    Invariant(
        "loader_yields_sampler",
        "DataLoader yields the sampler's indices",
        "samplers whose DataLoader batches differ from what they yield",
        f"{_MULTIPROCESS_BAD}:SeedsGlobalRNGInSetEpoch",
        where=Where.GROUPS,
    ),
    Invariant(
        "defaults",
        "built with the dataset alone, the contract's defaults",
        "drop-in replacements whose defaults differ (shuffle=False, drop_last=True, another seed), "
        "silently changing jobs that build them as DistributedSampler(dataset)",
        f"{_MULTIPROCESS_BAD}:ShuffleOffByDefault",
        where=Where.GROUPS,
    ),
    # The resumable extension (docs/resume-and-elastic.md, "The resume protocol"): a state
    # taken after k items of epoch e, loaded into fresh samplers with the same arguments, goes
    # on exactly there.
    Invariant(
        "resume_continues",
        "resume continues the epoch",
        "a resume that replays the epoch from its start, or from another epoch's order",
        f"{_RESUME_BAD}:ReplaysEpochZero",
        proven_under=_RESUMABLE,
        where=Where.IN_PROCESS,
    ),
    Invariant(
        "resume_exactly_once",
        "nothing repeated or lost across a resume",
        "a resume that skips too far or not far enough: items trained twice or never in the epoch",
        f"{_RESUME_BAD}:SkipsGlobalCount",
        proven_under=_RESUMABLE,
        where=Where.IN_PROCESS,
    ),
    Invariant(
        "resume_at_boundaries",
        "resume at an epoch's start and end",
        "a state taken after an epoch's last item that drops the next epoch, or one taken at its start that "
        "skips or replays",
        f"{_RESUME_BAD}:KeepsCountAfterPass",
        proven_under=_RESUMABLE,
        where=Where.IN_PROCESS,
    ),
    Invariant(
        "later_epochs_after_resume",
        "later epochs unchanged by a resume",
        "a resume skip re-applied in every later epoch",
        f"{_RESUME_BAD}:SkipsEveryEpoch",
        proven_under=_RESUMABLE,
        where=Where.IN_PROCESS,
    ),
    Invariant(
        "resumes_compose",
        "two resumes compose",
        "a second resume in one epoch that misaligns: the count restarts at each resume",
        f"{_RESUME_BAD}:CountRestartsOnResume",
        proven_under=_RESUMABLE,
        where=Where.IN_PROCESS,
    ),
    Invariant(
        "plain_state",
        "state is plain data, independent of global RNGs",
        "states that torch.load(weights_only=True) refuses, that change a fresh run, or resumes that draw "
        "from the global RNGs",
        f"{_RESUME_BAD}:StateHoldsNumpyArray",
        proven_under=_RESUMABLE,
        where=Where.IN_PROCESS,
    ),
    Invariant(
        "stale_state_refused",
        "a stale state is refused",
        "a state saved under another dataset size, seed, shuffle or drop_last, silently resumed at the wrong items",
        f"{_RESUME_BAD}:AcceptsStaleState",
        proven_under=_RESUMABLE,
        where=Where.IN_PROCESS,
    ),
    Invariant(
        "resumed_ranks_agree",
        "ranks agree after a resume",
        "a resume that deals the rest of the epoch unevenly (4/3/3): one rank runs a step more and DDP hangs",
        f"{_RESUME_BAD}:UnevenAfterResume",
        proven_under=_RESUMABLE,
        where=Where.GROUPS,
    ),
    Invariant(
        "resumes_through_loader",
        "resume through StatefulDataLoader",
        "a resume that is right on its own but not through torchdata's StatefulDataLoader, with or without "
        "workers: a state that moves on with the workers' prefetch, or that a short last batch resets, so "
        "the resumed epoch skips or replays batches",
        f"{_RESUME_BAD}:LiveStateDict",
        proven_under=_RESUMABLE,
        where=Where.GROUPS,
        packages=("torchdata",),
    ),
    Invariant(
        "other_world_size_refused",
        "a state from another world size is refused",
        "a sampler that is not elastic resuming on another number of ranks: shards of a topology that no longer exists",
        f"{_RESUME_BAD}:AcceptsOtherWorldSize",
        proven_under=_RESUMABLE,
        where=Where.IN_PROCESS,
    ),
    # The elastic extension (docs/resume-and-elastic.md, "The elastic protocol"): a state
    # saved on W ranks, loaded by every rank of W' ranks, goes on at the epoch's global cursor.
    Invariant(
        "elastic_cursor",
        "an elastic resume continues the global order",
        "a resume on another world size that goes on from another place of the epoch, or in another order: "
        "each new rank skips its old per-rank count, or the rest is re-dealt in another order",
        f"{_ELASTIC_BAD}:RestReordered",
        proven_under=_ELASTIC,
    ),
    Invariant(
        "elastic_exactly_once",
        "nothing repeated or lost across a change of world size",
        "a resume on more or fewer ranks that trains items twice or never in the epoch",
        f"{_ELASTIC_BAD}:SkipsOwnCountOnNewWorld",
        proven_under=_ELASTIC,
    ),
    Invariant(
        "elastic_ranks_agree",
        "equal remaining counts after a change of world size",
        "the rest of the epoch dealt out unevenly on the new ranks: one runs a step more and DDP hangs",
        f"{_ELASTIC_BAD}:UnpaddedOnNewWorld",
        proven_under=_ELASTIC,
    ),
    Invariant(
        "elastic_hops_compose",
        "world-size changes compose",
        "a second change of world size that misaligns: the state keeps the first world size",
        f"{_ELASTIC_BAD}:KeepsFirstWorldSize",
        proven_under=_ELASTIC,
    ),
)
