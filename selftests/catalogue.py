"""Which property proves itself against which known-bad sampler: the one place to look.

``KNOWN_BAD`` maps a ``--sampler`` spec to the property test that must reject it and
that property's flag (its bracketed title, ``sampler_conformance.subjects.REGISTRY[flag].title``,
starts the failure text). ``python -m selftests.catalogue`` prints the table in docs/contracts.md.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass, field

from sampler_conformance.core.invariants import Where
from sampler_conformance.subjects import REGISTRY, SUBJECTS, contract_named, subject_of

from .corpus import known_bad

KNOWN_BAD_MODULE = "selftests.corpus.known_bad"
# The test generated from the registry for every per-epoch invariant (properties/test_per_epoch.py).
PER_EPOCH_TEST = "test_per_epoch_invariant"

# Why a bug breaks more than its own invariant, for the reasons below.
STRIDED_FROM_HEAD = (
    "strided compares each rank's share with Q, the one-rank order padded from its head, "
    "so any other padding breaks it too"
)
UNEQUAL_SHARES = "ranks with unequal shares form no global order, so padding and dataset order cannot hold"


@dataclass(frozen=True)
class Rejection:
    test: str  # the test function in properties/ that checks the intended invariant
    flag: str  # the invariant the sampler's bug breaks
    implied: dict[str, str] = field(default_factory=dict)  # other invariants the bug genuinely breaks, and why
    # The sampler raises: the failure is titled as its subject's fault ("[dataset fault]"), not by the invariant.
    crashes: bool = False
    # Invariants the bug also breaks, but only on cases that random draws may or may not reach
    # (say N < W/2 in one test): allowed to fail, not required to. Hypothesis's draws for a fixed
    # seed still depend on its version and on which modules are loaded (it mines their constants).
    sometimes: dict[str, str] = field(default_factory=dict)
    # The Hypothesis profile its proof certifies under, where the selftests' quick one draws
    # too few cases to show the bug (say, only on weights spread far apart); None: the selftests' own.
    profile: str | None = None

    @property
    def title(self) -> str:
        if not self.crashes:
            return f"[{REGISTRY[self.flag].title}]"
        # Whichever property was checking: the subject the invariant's known-bad is certified as.
        return f"[{subject_of(contract_named(REGISTRY[self.flag].proven_under)).fault_title}]"

    @property
    def failed(self) -> set[str]:
        """The invariants a full run of properties/ must report failed..."""
        return {self.flag, *self.implied}

    @property
    def allowed(self) -> set[str]:
        """...and the only ones it may: anything else charged is a wrong verdict."""
        return self.failed | set(self.sometimes)


def _spec(name: str) -> str:
    return f"{KNOWN_BAD_MODULE}:{name}"


def _every(flags: str, why: str) -> dict[str, str]:
    return {flag: why for flag in flags.split()}


KNOWN_BAD: dict[str, Rejection] = {
    _spec("LenIgnoresDropLast"): Rejection(PER_EPOCH_TEST, "len_matches_iter"),
    _spec("FloorNotCeil"): Rejection(
        PER_EPOCH_TEST, "equal_length", {"covers": "floor(N/W) items per rank leave the remainder unread"}
    ),
    _spec("UnevenContiguousSplit"): Rejection(
        PER_EPOCH_TEST,
        "equal_length",
        {
            "pads_from_head": UNEQUAL_SHARES,
            "unshuffled_in_order": UNEQUAL_SHARES,
            "strided": "its shares are contiguous blocks, and of unequal length",
        },
        sometimes={"equal_batches": "unequal shares give unequal batch counts, for the batch sizes drawn"},
    ),
    _spec("YieldsTensors"): Rejection(PER_EPOCH_TEST, "valid_indices"),
    _spec("YieldsFloats"): Rejection(PER_EPOCH_TEST, "valid_indices"),
    _spec("PadsPastTheEnd"): Rejection(
        PER_EPOCH_TEST,
        "valid_indices",
        {"pads_from_head": "its padding is N + k, not the head", "strided": STRIDED_FROM_HEAD},
    ),
    _spec("NeverStops"): Rejection(PER_EPOCH_TEST, "valid_indices"),
    _spec("RankInSeed"): Rejection(
        PER_EPOCH_TEST,
        "covers",
        {
            "disjoint": "ranks that shuffle differently share indices",
            "pads_from_head": "the order rebuilt from ranks that shuffle differently is no padded permutation",
            "strided": "each rank cuts its share from its own order",
        },
    ),
    _spec("DropLastIgnored"): Rejection(
        PER_EPOCH_TEST,
        "disjoint",
        {"equal_length": "it pads under drop_last, so every rank yields ceil(N/W), not floor(N/W)"},
    ),
    _spec("PadsFromTail"): Rejection(PER_EPOCH_TEST, "pads_from_head", {"strided": STRIDED_FROM_HEAD}),
    _spec("RandomPadding"): Rejection(PER_EPOCH_TEST, "pads_from_head", {"strided": STRIDED_FROM_HEAD}),
    _spec("SingleHeadCopy"): Rejection(
        PER_EPOCH_TEST,
        "pads_from_head",
        {
            **_every(
                "len_matches_iter equal_length",
                "when N < W/2 the one head copy is too short, so the last ranks yield fewer items than len() says",
            ),
            "strided": STRIDED_FROM_HEAD,
            "unshuffled_in_order": UNEQUAL_SHARES,
        },
        sometimes={"equal_batches": "the batch-count test draws N < W/2 only now and then"},
    ),
    _spec("ContiguousBlocks"): Rejection(
        PER_EPOCH_TEST,
        "strided",
        {"unshuffled_in_order": "Q is rebuilt from the ranks strided, so contiguous shares scramble its head"},
        sometimes={"pads_from_head": "... and its padding, on the padded cases the draws reach"},
    ),
    _spec("ShuffleIgnored"): Rejection(PER_EPOCH_TEST, "unshuffled_in_order"),
    _spec("GlobalRNG"): Rejection(
        "test_same_order_without_set_epoch",
        "deterministic",
        {
            **_every(
                "covers disjoint strided",
                "each rank's sampler draws the next permutation from the one global RNG, so ranks overlap",
            ),
            "pads_from_head": "the order rebuilt from ranks that overlap is no padded permutation",
        },
    ),
    _spec("ReshufflesEveryIter"): Rejection("test_same_order_without_set_epoch", "deterministic"),
    _spec("EpochIgnored"): Rejection("test_set_epoch_reshuffles", "reshuffles_on_set_epoch"),
    _spec("WrapperDropsSetEpoch"): Rejection("test_set_epoch_reshuffles", "reshuffles_on_set_epoch"),
    _spec("WrapperWithoutSetEpoch"): Rejection("test_set_epoch_reshuffles", "reshuffles_on_set_epoch"),
    _spec("SeedIgnored"): Rejection("test_seed_changes_order", "seed_effective"),
    _spec("NoRankValidation"): Rejection("test_invalid_arguments_refused", "validates_arguments"),
    _spec("CrashesOnEmptyDataset"): Rejection("test_edge_sizes", "edge_sizes", crashes=True),
    _spec("UnpaddedStrided"): Rejection(
        "test_equal_batch_counts",
        "equal_batches",
        {
            "equal_length": "without padding the ranks yield ceil(N/W) or floor(N/W) items",
            "pads_from_head": UNEQUAL_SHARES,
            "unshuffled_in_order": UNEQUAL_SHARES,
            "strided": "without padding the last ranks' shares stop short of Q[r::W]",
        },
    ),
}

RESUME_BAD_MODULE = "selftests.corpus.resume_bad"
RESUMABLE_CONTRACT = "torch+resumable"
# A resume that goes on from the wrong place: R2 (across the ranks) cannot fail while R1 (on
# each rank) holds and the base contract does, so every bug of R2 is one of R1 too.
ONE_RANK_WRONG = "a rank whose epoch differs from the uninterrupted one breaks resume_continues"

# The resume bugs, certified under torch+resumable (selftests/test_resume.py).
RESUME_BAD: dict[str, Rejection] = {
    f"{RESUME_BAD_MODULE}:ReplaysEpochZero": Rejection(
        "test_resume_continues_the_epoch",
        "resume_continues",
        {"resume_exactly_once": "k items of epoch e and the rest of epoch 0's order repeat some items and miss others"},
    ),
    f"{RESUME_BAD_MODULE}:SkipsGlobalCount": Rejection(
        "test_resume_yields_each_item_once",
        "resume_exactly_once",
        {"resume_continues": ONE_RANK_WRONG},
        sometimes={
            "resumes_compose": "when the first resume skips past the end of the pass, the pass ends early and "
            "the second resume starts a new one"
        },
    ),
    f"{RESUME_BAD_MODULE}:KeepsCountAfterPass": Rejection(
        "test_resume_at_the_epochs_boundaries", "resume_at_boundaries"
    ),
    f"{RESUME_BAD_MODULE}:SkipsEveryEpoch": Rejection("test_later_epochs_after_a_resume", "later_epochs_after_resume"),
    f"{RESUME_BAD_MODULE}:CountRestartsOnResume": Rejection("test_two_resumes_compose", "resumes_compose"),
    f"{RESUME_BAD_MODULE}:StateHoldsNumpyArray": Rejection("test_state_is_plain_data", "plain_state"),
    f"{RESUME_BAD_MODULE}:AcceptsStaleState": Rejection("test_stale_state_refused", "stale_state_refused"),
    f"{RESUME_BAD_MODULE}:AcceptsOtherWorldSize": Rejection(
        "test_state_from_another_world_size_refused", "other_world_size_refused"
    ),
}

# The resume bugs only real process groups show, certified under torch+resumable by the
# whole suite (properties/ and conformance/, --world-sizes=GROUP_WORLD_SIZES).
RESUME_GROUP_BAD: dict[str, Rejection] = {
    f"{RESUME_BAD_MODULE}:UnevenAfterResume": Rejection(
        "test_ranks_agree_after_a_resume",
        "resumed_ranks_agree",
        {"resume_continues": "the ranks' resumed passes lack the padding the uninterrupted ones end with"},
        sometimes={
            "resumes_compose": "a rank whose resumed pass is short ends it before the second checkpoint, so the "
            "second resume starts a new pass",
            "resumes_through_loader": "through the loader too, the resumed pass lacks the padding when the few "
            "loader examples draw an odd N, keep_last and a checkpoint after a batch or more",
        },
    ),
    # Only loader workers prefetch ahead of the loop: the test without them holds.
    f"{RESUME_BAD_MODULE}:LiveStateDict": Rejection(
        "test_resume_through_stateful_dataloader_with_workers", "resumes_through_loader"
    ),
}
GROUP_WORLD_SIZES = "2"

ELASTIC_BAD_MODULE = "selftests.corpus.elastic_bad"
ELASTIC_CONTRACT = "torch+elastic"
# W -> W' -> W'': the last leg of a chain is a change of world size too, judged as E1 judges one.
LAST_LEG_TOO = "the last leg of a chain W -> W' -> W'' is a change of world size too, with the same bug"
# The elastic bugs, certified under torch+elastic by the whole suite (properties/ and
# conformance/, --world-sizes=ELASTIC_WORLD_SIZES: both changes, 1 -> 2 and 2 -> 1, in groups).
ELASTIC_BAD: dict[str, Rejection] = {
    f"{ELASTIC_BAD_MODULE}:RestReordered": Rejection(
        "test_elastic_resume_continues_the_global_order", "elastic_cursor", {"elastic_hops_compose": LAST_LEG_TOO}
    ),
    f"{ELASTIC_BAD_MODULE}:SkipsOwnCountOnNewWorld": Rejection(
        "test_elastic_resume_yields_each_item_once",
        "elastic_exactly_once",
        {
            "elastic_cursor": "the new ranks go on from another place of the global order",
            "elastic_hops_compose": LAST_LEG_TOO,
        },
    ),
    f"{ELASTIC_BAD_MODULE}:UnpaddedOnNewWorld": Rejection(
        "test_elastic_resume_leaves_equal_counts",
        "elastic_ranks_agree",
        sometimes={
            "elastic_hops_compose": "when a chain's middle leg takes every item of its longest rank, its shorter "
            "ranks take fewer, and rank 0's state overstates the cursor"
        },
    ),
    f"{ELASTIC_BAD_MODULE}:KeepsFirstWorldSize": Rejection("test_world_size_changes_compose", "elastic_hops_compose"),
}
ELASTIC_WORLD_SIZES = "1,2"

# Samplers that must be certified under the default contract.
STREAMS_BAD_MODULE = "selftests.corpus.streams_bad"
STREAM_CONTRACT = "stream"
SHUFFLED_APART = "each rank and each worker shuffles on its own, so their parts of the data overlap and miss items"

# The streaming datasets' bugs, certified under stream (selftests/test_streams.py): in-process...
STREAMS_BAD: dict[str, Rejection] = {
    f"{STREAMS_BAD_MODULE}:RefusesEmpty": Rejection("test_stream_runs", "stream_runs", crashes=True),
    f"{STREAMS_BAD_MODULE}:FloatIds": Rejection("test_stream_epoch", "item_ids"),
    f"{STREAMS_BAD_MODULE}:StringIds": Rejection("test_stream_epoch", "item_ids"),
    f"{STREAMS_BAD_MODULE}:OffByOne": Rejection(
        "test_stream_epoch", "no_foreign_items", {"exactly_once": "id 0 is never yielded, and N is yielded instead"}
    ),
    f"{STREAMS_BAD_MODULE}:NoWorkerSplit": Rejection("test_stream_epoch", "exactly_once"),
    f"{STREAMS_BAD_MODULE}:ShardsPerRank": Rejection("test_even_batches", "even_batches"),
    f"{STREAMS_BAD_MODULE}:CollapsedShards": Rejection("test_no_starved_worker", "no_starved_worker"),
    f"{STREAMS_BAD_MODULE}:UnseededShuffle": Rejection(
        "test_stream_deterministic", "stream_deterministic", {"exactly_once": SHUFFLED_APART}
    ),
    f"{STREAMS_BAD_MODULE}:EpochIgnored": Rejection("test_stream_reshuffles", "stream_reshuffles"),
    # Its order repeats only through workers, which the in-process loader copies it for as real ones do.
    f"{STREAMS_BAD_MODULE}:GeneratorAdvancedInIter": Rejection("test_stream_reshuffles", "stream_reshuffles"),
    f"{STREAMS_BAD_MODULE}:SeedIgnored": Rejection("test_stream_seed_effective", "stream_seed_effective"),
    f"{STREAMS_BAD_MODULE}:NeedsSetEpoch": Rejection("test_stream_runs", "stream_runs", crashes=True),
}
# ...and the bugs only real process groups show, certified by the whole suite.
STREAMS_GROUP_BAD: dict[str, Rejection] = {
    f"{STREAMS_BAD_MODULE}:HashSeeded": Rejection(
        "test_stream_agrees_across_processes",
        "stream_agrees",
        {"exactly_once": "each rank's process shuffles with its own hash seed, so the ranks' parts overlap"},
    ),
    f"{STREAMS_BAD_MODULE}:EpochInAttribute": Rejection(
        "test_epoch_reaches_persistent_workers", "epoch_reaches_workers"
    ),
    f"{STREAMS_BAD_MODULE}:EpochCountedByCopies": Rejection(
        "test_epoch_reaches_persistent_workers", "epoch_reaches_workers"
    ),
    # Datasets that take their rank from the group: only real groups can judge them.
    f"{STREAMS_BAD_MODULE}:UnseededShuffleFromGroup": Rejection(
        "test_stream_deterministic",
        "stream_deterministic",
        {
            "exactly_once": SHUFFLED_APART,
            "epoch_reaches_workers": "every worker shuffles afresh, so fresh and persistent workers read different streams",
        },
    ),
    f"{STREAMS_BAD_MODULE}:EpochIgnoredFromGroup": Rejection("test_stream_reshuffles", "stream_reshuffles"),
}
# ...and the bugs of datasets that pad or drop to make the ranks' counts equal, certified
# in-process under the contract their bug breaks.
STREAMS_EQUALIZING_BAD: dict[tuple[str, str], Rejection] = {
    (f"{STREAMS_BAD_MODULE}:PadsShortRanks", "stream_padded"): Rejection("test_stream_epoch", "padded_once"),
    (f"{STREAMS_BAD_MODULE}:PadsPerWorker", "stream_padded"): Rejection(
        "test_same_items_any_workers", "same_items_any_workers"
    ),
    (f"{STREAMS_BAD_MODULE}:TruncatesToShortestRank", "stream_truncated"): Rejection(
        "test_stream_epoch", "truncated_once"
    ),
}
# ...and the bugs of a resume through StatefulDataLoader, which real process groups show,
# certified by the whole suite under stream+resumable.
STREAM_RESUMABLE_CONTRACT = "stream+resumable"
STREAMS_RESUME_BAD: dict[str, Rejection] = {
    f"{STREAMS_BAD_MODULE}:IgnoresLoadedState": Rejection(
        "test_stream_resume_continues",
        "stream_resume_continues",
        {"stream_resumes_compose": "its first resume already restarts the epoch, so a second one does too"},
    ),
    f"{STREAMS_BAD_MODULE}:StaleStateAfterResume": Rejection("test_stream_resumes_compose", "stream_resumes_compose"),
    f"{STREAMS_BAD_MODULE}:OffsetOutlivesEpoch": Rejection(
        "test_stream_epoch_after_resume",
        "stream_epoch_after_resume",
        sometimes={
            "stream_resumes_compose": "checkpointed at an epoch's end, it carries the offset into the next epoch, "
            "whose own checkpoint then holds it, so a second resume loses that epoch's start"
        },
    ),
    f"{STREAMS_BAD_MODULE}:NumpyPosition": Rejection("test_stream_plain_state", "stream_plain_state"),
}
STREAM_WORLD_SIZES = "2"

GOOD = (
    "torch.utils.data.distributed:DistributedSampler",
    "selftests.corpus.reference:NumpyDistributedSampler",
    "selftests.corpus.parts:PartsSampler",  # the base every known-bad sampler deviates from
)


def sampler_of(spec: str) -> type:
    return getattr(known_bad, spec.rpartition(":")[2])


def known_bad_bug(spec: str) -> str:
    """The first paragraph of any known-bad's docstring (``MODULE:ATTR``), on one line."""
    module, _, attribute = spec.rpartition(":")
    documented = getattr(importlib.import_module(module), attribute)
    return " ".join((inspect.getdoc(documented) or "").split("\n\n")[0].split())


def invariant_tables() -> str:
    """One Markdown table per subject, every invariant it declares: the flag and its title,
    where it is checked, the contracts and extensions that promise it, the bug class it
    guards against, and its known-bad with that bug. Derived from the declarations alone
    (``Invariant``, ``Subject.contracts``, ``Subject.extensions``)."""
    parts = []
    for name, subject in SUBJECTS.items():
        rows = [
            f"### {name}",
            "",
            "| invariant | checked | promised by | guards against | known-bad: its bug |",
            "| --- | --- | --- | --- | --- |",
        ]
        for invariant in subject.invariants:
            promised = [f"`{c}`" for c, contract in subject.contracts.items() if invariant.flag in contract.flags]
            promised += [f"`+{e}`" for e, extension in subject.extensions.items() if invariant.flag in extension.flags]
            known_bad = invariant.known_bad.rpartition(":")[2]
            rows.append(
                f"| `{invariant.flag}`: {invariant.title} | {WHERE_WORDS[invariant.where]} | {', '.join(promised)} "
                f"| {invariant.guards} | `{known_bad}`: {known_bad_bug(invariant.known_bad)} |"
            )
        parts.append("\n".join(rows))
    return "\n\n".join(parts)


WHERE_WORDS = {Where.BOTH: "in-process, groups", Where.IN_PROCESS: "in-process", Where.GROUPS: "groups"}
# docs/contracts.md holds invariant_tables()'s output between these lines (test_registry checks it).
GENERATED_BEGIN = "<!-- generated by python -m selftests.catalogue: do not edit -->"
GENERATED_END = "<!-- end of generated -->"


def property_table() -> str:
    """Markdown rows: property, what it guards, the known-bad samplers that prove it."""
    rows = ["| property | test | guards against | known-bad sampler: bug |", "| --- | --- | --- | --- |"]
    by_flag: dict[str, list[str]] = {}
    for spec, rejection in KNOWN_BAD.items():
        by_flag.setdefault(rejection.flag, []).append(spec)
    tests = {rejection.flag: rejection.test for rejection in KNOWN_BAD.values()}
    for flag, specs in by_flag.items():
        proofs = "<br>".join(f"`{spec.rpartition(':')[2]}`: {known_bad_bug(spec)}" for spec in specs)
        rows.append(f"| {REGISTRY[flag].title} | `{tests[flag]}` | {REGISTRY[flag].guards} | {proofs} |")
    return "\n".join(rows)


# The weighted samplers' bugs, certified under weighted by properties/ (selftests/test_weighted.py).
WEIGHTED_BAD_MODULE = "selftests.corpus.weighted_bad"
WEIGHTED_CONTRACT = "weighted"
WEIGHTED_BAD: dict[str, Rejection] = {
    f"{WEIGHTED_BAD_MODULE}:WithoutReplacement": Rejection(
        "test_weighted_runs",
        "weighted_runs",
        crashes=True,
        sometimes={
            "zero_weight_never_drawn": "without replacement, torch.multinomial fills draws past the items of positive "
            "weight with items of weight 0 (weights=[0.0, 1.0], 2 draws), where it does not refuse them"
        },
    ),
    f"{WEIGHTED_BAD_MODULE}:TensorDraws": Rejection("test_weighted_epoch", "drawn_indices"),
    f"{WEIGHTED_BAD_MODULE}:FlooredWeights": Rejection(
        "test_weighted_epoch",
        "zero_weight_never_drawn",
        {"frequencies_match_weights": "the floor lifts the smallest positive weights too (weights spread over 10^6)"},
        profile="dev",  # weights spread that far are drawn in few cases
    ),
    f"{WEIGHTED_BAD_MODULE}:LenCountsEveryRank": Rejection("test_weighted_epoch", "draw_counts"),
    f"{WEIGHTED_BAD_MODULE}:IgnoresNumSamples": Rejection(
        "test_weighted_epoch",
        "draw_counts",
        sometimes={
            "ranks_draw_apart": "a rank draws ceil(N/W) where the test asks num_samples=40 to tell the ranks' "
            "streams apart: a few draws per rank can coincide"
        },
    ),
    f"{WEIGHTED_BAD_MODULE}:EveryRankSameStream": Rejection(
        "test_ranks_draw_apart",
        "ranks_draw_apart",
        {"frequencies_match_weights": "W copies of n draws are not W x n draws: the counts stray W times as far"},
    ),
    f"{WEIGHTED_BAD_MODULE}:GlobalGenerator": Rejection("test_weighted_deterministic", "weighted_deterministic"),
    f"{WEIGHTED_BAD_MODULE}:GlobalGeneratorWithoutSetEpoch": Rejection(
        "test_weighted_deterministic", "weighted_deterministic"
    ),
    f"{WEIGHTED_BAD_MODULE}:UnshardedGlobalStream": Rejection(
        "test_ranks_draw_apart",
        "ranks_draw_apart",
        {"weighted_deterministic": "the global generator: a fresh sampler draws on from wherever the process is"},
    ),
    f"{WEIGHTED_BAD_MODULE}:EpochNotPassedOn": Rejection("test_weighted_reshuffles", "weighted_reshuffles"),
    f"{WEIGHTED_BAD_MODULE}:SeedIgnored": Rejection("test_weighted_seed_effective", "weighted_seed_effective"),
    f"{WEIGHTED_BAD_MODULE}:PartitionWeighted": Rejection(
        "test_frequencies_match_weights", "frequencies_match_weights"
    ),
}
# ...and under weighted_partition, what MONAI's DistributedWeightedRandomSampler promises.
WEIGHTED_PARTITION_CONTRACT = "weighted_partition"
WEIGHTED_PARTITION_BAD: dict[str, Rejection] = {
    f"{WEIGHTED_BAD_MODULE}:UnshuffledPartition": Rejection(
        "test_frequencies_in_partition", "frequencies_in_partition"
    ),
}

# Known-bad batch samplers (selftests/corpus/batch_bad.py), under dynamic_batches...
BATCH_BAD_MODULE = "selftests.corpus.batch_bad"
DYNAMIC_BATCHES_CONTRACT = "dynamic_batches"
_CACHED_PLAN = "each process plans its own batches, so in a job the ranks' parts overlap and leave items out"
DYNAMIC_BATCHES_BAD: dict[str, Rejection] = {
    f"{BATCH_BAD_MODULE}:RefusesLongItem": Rejection("test_batches_run", "batches_run", crashes=True),
    f"{BATCH_BAD_MODULE}:EmptyBucketFlushed": Rejection("test_batch_epoch", "batch_items"),
    f"{BATCH_BAD_MODULE}:UnevenRoundRobin": Rejection("test_batch_epoch", "equal_batch_counts"),
    f"{BATCH_BAD_MODULE}:LenOfGlobalPlan": Rejection("test_batch_len_matches", "batch_len_matches"),
    f"{BATCH_BAD_MODULE}:LenOfPreviousPass": Rejection("test_batch_len_matches", "batch_len_matches"),
    f"{BATCH_BAD_MODULE}:LenFrozenAtConstruction": Rejection("test_batch_len_matches", "batch_len_matches"),
    f"{BATCH_BAD_MODULE}:EveryRankWholePlanLenRaises": Rejection(
        "test_batch_epoch",
        "each_item_once",
        {"batch_len_matches": "its __len__ raises: charged there, while the batches read are judged by the rest"},
    ),
    f"{BATCH_BAD_MODULE}:GeneratorCarriedOver": Rejection(
        "test_batches_deterministic",
        "batches_deterministic",
        sometimes={
            "batch_len_matches": "len() asked before a pass plans with the previous pass's offset, which may pack "
            "another number of batches than the pass yields"
        },
    ),
    f"{BATCH_BAD_MODULE}:EpochIgnored": Rejection("test_batches_reshuffle", "batches_reshuffle"),
    f"{BATCH_BAD_MODULE}:PlanCachedPerProcess": Rejection(
        "test_batch_plan_agrees_across_processes",
        "batch_plan_agrees",
        {
            "each_item_once": _CACHED_PLAN,
            "batches_deterministic": "numpy's unseeded generator: the script run again (or the cache refilled by "
            "another case) plans other batches",
        },
        sometimes={"equal_batch_counts": "two processes' plans have as many batches only by chance"},
    ),
    f"{BATCH_BAD_MODULE}:ClosesAfterOverflow": Rejection(
        "test_batch_epoch",
        "within_budget",
        sometimes={"each_item_once": "its batches overflow, so a dropped last round may hold more than W - 1 budgets"},
    ),
    f"{BATCH_BAD_MODULE}:PadsByRepeating": Rejection("test_batch_epoch", "each_item_once"),
}
# ...under micro_batches...
MICRO_BATCHES_CONTRACT = "micro_batches"
MICRO_BATCHES_BAD: dict[str, Rejection] = {
    # It fails only where N is a multiple of batch_size: the groups' smaller N (up to 48) reach one.
    f"{BATCH_BAD_MODULE}:StepsEndBeforeTheLast": Rejection("test_batch_epoch", "each_item_once"),
}
# ...and under poisson.
POISSON_CONTRACT = "poisson"
POISSON_BAD: dict[str, Rejection] = {
    f"{BATCH_BAD_MODULE}:SkipsEmptyBatches": Rejection(
        "test_batch_epoch",
        "equal_batch_counts",
        {"batch_len_matches": "len() counts the steps, the empty ones it skipped too"},
    ),
    f"{BATCH_BAD_MODULE}:PoissonNotSharded": Rejection(
        "test_batch_epoch",
        "poisson_shards_disjoint",
        {"poisson_rate": "every item is drawn by every rank: W times the declared rate"},
    ),
    f"{BATCH_BAD_MODULE}:RateSplitAcrossRanks": Rejection("test_poisson_rate", "poisson_rate"),
}


if __name__ == "__main__":
    print(property_table(), "", GENERATED_BEGIN, invariant_tables(), GENERATED_END, sep="\n")
