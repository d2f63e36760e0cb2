"""The weighted sampler's checks: each reads the ranks' draws (``runs.DrawnEpoch``) and
returns the violations of its invariant, worded for the user."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np

from sampler_conformance.core.counting import check_reported_lengths
from sampler_conformance.core.evidence import Violation, counted, shorten
from sampler_conformance.core.frequencies import FrequencyVerdict, frequency_test, inclusion_test
from sampler_conformance.core.invariants import Declared, Invariant, OneEpoch, Where

from .chance import SAME_BY_CHANCE, chance_alike, comparisons, stream_laws
from .contracts import (
    FOLLOWS_PARTITION_WEIGHTS,
    FOLLOWS_WEIGHTS,
    RANKS_DRAW_APART,
    WEIGHTED_DRAWS,
    WEIGHTED_WITHOUT_REPLACEMENT,
    WITHOUT_REPLACEMENT,
    WeightedContract,
)
from .runs import DrawnEpoch

BAD = "selftests.corpus.weighted_bad"  # the known-bad samplers that prove the checks can fail
WEIGHTED = "weighted"

# The invariants judged on one epoch of every rank, each declared on its check below: the
# tests are generated from it (properties/test_weighted.py, on simulated ranks and in real groups).
ONE_EPOCH: OneEpoch[Callable[[DrawnEpoch], list[Violation]]] = OneEpoch()
# The others checked here, each by a check of its own.
DECLARED = Declared()


def _pooled_counts(epoch: DrawnEpoch) -> np.ndarray:
    """How often every item was drawn, all ranks together (indices outside range(N) are drawn_indices')."""
    size = epoch.case.dataset_size
    drawn = np.concatenate(epoch.observation.indices) if epoch.observation.indices else np.empty(0, np.int64)
    drawn = drawn[(drawn >= 0) & (drawn < size)]
    return np.bincount(drawn, minlength=size)


@ONE_EPOCH.declare(
    Invariant(
        "drawn_indices",
        "draws are int indices",
        "draws yielded as tensors or floats, which a DataLoader's dataset may index wrongly or refuse",
        f"{BAD}:TensorDraws",
        proven_under=WEIGHTED,
        promised_by=(WEIGHTED_DRAWS,),
    )
)
def check_in_range(epoch: DrawnEpoch) -> list[Violation]:
    size = epoch.case.dataset_size
    for rank, drawn in enumerate(epoch.observation.indices):
        outside = drawn[(drawn < 0) | (drawn >= size)]
        if outside.size:
            return [Violation("drawn_indices", f"rank {rank} drew {shorten(outside)}, outside range(N={size})")]
    return []


@ONE_EPOCH.declare(
    Invariant(
        "zero_weight_never_drawn",
        "an item of weight 0 is never drawn",
        "weights smoothed or floored so that excluded items come back into training",
        f"{BAD}:FlooredWeights",
        proven_under=WEIGHTED,
        promised_by=(WEIGHTED_DRAWS,),
    )
)
def check_zero_weight(epoch: DrawnEpoch) -> list[Violation]:
    zero = np.asarray(epoch.case.weights) == 0
    for rank, drawn in enumerate(epoch.observation.indices):
        inside = drawn[(drawn >= 0) & (drawn < zero.size)]
        banned = np.unique(inside[zero[inside]])
        if banned.size:
            return [
                Violation(
                    "zero_weight_never_drawn",
                    f"rank {rank} drew {shorten(banned)}, of weight 0: an item the weights exclude is trained on",
                )
            ]
    return []


@ONE_EPOCH.declare(
    Invariant(
        "draw_counts",
        "num_samples draws per rank per epoch, as len() says",
        "len() counting every rank's draws, or ranks drawing different numbers, which hangs a collective "
        "(pytorch/vision #9127: len() disagreeing with what is yielded)",
        f"{BAD}:LenCountsEveryRank",
        proven_under=WEIGHTED,
        promised_by=(WEIGHTED_DRAWS,),
    )
)
def check_draw_counts(epoch: DrawnEpoch) -> list[Violation]:
    expected = epoch.case.num_samples
    for rank, drawn in enumerate(epoch.observation.indices):
        if drawn.size != expected:
            return [
                Violation(
                    "draw_counts",
                    f"rank {rank} drew {drawn.size} indices where num_samples={expected}: ranks that run different "
                    f"numbers of steps hang the job in a collective",
                )
            ]
    return check_reported_lengths(
        epoch.observation, "draw_counts", "len() says {said}, but it drew {yielded}", ("index", "indices")
    )


@DECLARED(
    Invariant(
        "ranks_draw_apart",
        "the ranks draw different streams",
        "ranks drawing the same weighted stream: every rank (W times the same data, the epoch W times too long, "
        "Lightning-AI/pytorch-lightning #3716), or pairs of ranks seeded by what repeats across a job (the local "
        "rank, a mesh coordinate); in real groups every process starts from the same global "
        "generator state, as fresh processes and seed_everything leave them, so a sampler that draws on it is seen",
        f"{BAD}:EveryRankSameStream",
        proven_under=WEIGHTED,
        judged_from=2,  # an order: one item cannot show it
        promised_by=(RANKS_DRAW_APART,),
    )
)
def check_ranks_apart(epoch: DrawnEpoch, contract: WeightedContract) -> list[Violation]:
    """Every pair of ranks whose streams a conforming sampler makes alike only by a chance below
    their share of SAME_BY_CHANCE draws apart: ranks seeded by what repeats across a job (the
    local rank, a mesh coordinate) draw alike in pairs while the others differ."""
    streams = epoch.observation.indices
    laws = stream_laws(epoch.case, contract)
    share = SAME_BY_CHANCE / comparisons(len(streams))
    alike = [
        (a, b)
        for a, b in itertools.combinations(range(len(streams)), 2)
        if np.array_equal(streams[a], streams[b])
        and chance_alike(epoch.case, contract, laws[a], laws[b], streams[a].size) <= share
    ]
    if not alike:
        return []
    if len(alike) == len(streams) * (len(streams) - 1) // 2:
        said = f"all {len(streams)} ranks drew the same {streams[0].size} indices, {shorten(streams[0])}"
        return [Violation("ranks_draw_apart", f"{said}: each step trains on W copies of one batch")]
    (a, b), *others = alike
    also = f"; so did {_pairs(others)}" if others else ""
    return [
        Violation(
            "ranks_draw_apart",
            f"ranks {a} and {b} of {len(streams)} drew the same {streams[a].size} indices, {shorten(streams[a])}"
            f"{also}: each step trains twice on those draws. Ranks alike in pairs are seeded by what repeats "
            f"across the job (the local rank on each node, a coordinate of the device mesh), not the global rank",
        )
    ]


def _pairs(pairs: Sequence[tuple[int, int]]) -> str:
    shown = ", ".join(f"ranks {a} and {b}" for a, b in pairs[:4])
    return shown + (f" and {len(pairs) - 4} more pairs" if len(pairs) > 4 else "")


def check_streams_differ(
    first: DrawnEpoch, second: DrawnEpoch, contract: WeightedContract, flag: str, what: str
) -> list[Violation]:
    """Each rank's stream differs between two readings (epochs, seeds), wherever a conforming
    sampler's would be alike only by a chance below its share of SAME_BY_CHANCE: one rank that
    ignores the epoch while the others reshuffle is found as surely as all of them."""
    before, after = first.observation.indices, second.observation.indices
    laws = zip(stream_laws(first.case, contract), stream_laws(second.case, contract), strict=True)
    share = SAME_BY_CHANCE / comparisons(len(before))
    alike = [
        rank
        for rank, (a, b, (p, q)) in enumerate(zip(before, after, laws, strict=True))
        if np.array_equal(a, b) and chance_alike(first.case, contract, p, q, a.size) <= share
    ]
    if not alike:
        return []
    if len(alike) == len(before):
        return [Violation(flag, f"{what}: every rank drew the same stream, rank 0 {shorten(before[0])}")]
    moved = [rank for rank in range(len(before)) if rank not in alike]
    shown = shorten(before[alike[0]]) + (f" on rank {alike[0]}" if len(alike) > 1 else "")
    return [
        Violation(
            flag,
            f"{what}: {_ranks(alike)} drew the same stream in both, {shown}, "
            f"while {_ranks(moved)} drew another: the change does not reach the draws of {_ranks(alike)}",
        )
    ]


def _ranks(ranks: Sequence[int]) -> str:
    """ "rank 1", "ranks 1 and 3", "ranks 1, 2 and 3"."""
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    return "ranks " + ", ".join(map(str, ranks[:-1])) + f" and {ranks[-1]}"


@DECLARED(
    Invariant(
        "frequencies_match_weights",
        "draws follow the weights",
        "a distribution other than the weights over the whole dataset: each rank normalising the weights of its "
        "own partition (MONAI's DistributedWeightedRandomSampler, Project-MONAI/MONAI #1742) over-draws items in "
        "light partitions",
        f"{BAD}:PartitionWeighted",
        proven_under=WEIGHTED,
        where=Where.IN_PROCESS,
        promised_by=(FOLLOWS_WEIGHTS,),
    )
)
def check_frequencies(epochs: Sequence[DrawnEpoch], alpha: float) -> tuple[list[Violation], FrequencyVerdict]:
    """All ranks' draws of ``epochs`` together against the weights over the whole dataset, at
    false-alarm rate ``alpha`` (``harness.core.frequencies``). Draws of items of weight 0 are
    zero_weight_never_drawn's, and left out of the count."""
    counts = sum(_pooled_counts(epoch) for epoch in epochs)
    probabilities = epochs[0].case.probabilities
    counts = np.where(probabilities > 0, counts, 0)
    verdict = frequency_test(counts, probabilities, alpha)
    if not verdict.fails:
        return [], verdict
    return [
        Violation("frequencies_match_weights", f"the draws do not follow the weights: {verdict.describe()}")
    ], verdict


@DECLARED(
    Invariant(
        "frequencies_in_partition",
        "each rank's draws follow its partition's weights",
        "a partition other than DistributedSampler's: the shuffle, the seed or the epoch left out, so a rank "
        "draws over items that are not its own",
        f"{BAD}:UnshuffledPartition",
        proven_under="weighted_partition",
        where=Where.IN_PROCESS,
        promised_by=(FOLLOWS_PARTITION_WEIGHTS,),
    )
)
def check_partition_frequencies(
    epoch: DrawnEpoch, partitions: Sequence[Sequence[int]], alpha: float
) -> tuple[list[Violation], list[FrequencyVerdict]]:
    """Each rank's draws against the weights of its partition (``partitions[r]``, an index once
    per place it holds: a padded partition weighs a repeated index twice), normalised on their
    own, at rate ``alpha`` per rank. A rank whose partition carries no weight is not judged."""
    weights = np.asarray(epoch.case.weights, dtype=np.float64)
    size = weights.size
    verdicts: list[FrequencyVerdict] = []
    for rank, (drawn, part) in enumerate(zip(epoch.observation.indices, partitions, strict=True)):
        mass = np.bincount(np.asarray(part, dtype=np.int64), weights=weights[part], minlength=size)
        if mass.sum() == 0:
            continue
        inside = drawn[(drawn >= 0) & (drawn < size)]
        foreign = np.unique(inside[(mass[inside] == 0) & (weights[inside] > 0)])
        if foreign.size:
            return [
                Violation(
                    "frequencies_in_partition",
                    f"rank {rank} drew {shorten(foreign)}, outside its partition {shorten(np.unique(part))}",
                )
            ], verdicts
        counts = np.bincount(inside, minlength=size)
        probabilities = mass / mass.sum()
        verdict = frequency_test(np.where(probabilities > 0, counts, 0), probabilities, alpha)
        verdicts.append(verdict)
        if verdict.fails:
            return [
                Violation(
                    "frequencies_in_partition",
                    f"rank {rank}'s draws do not follow its partition's weights: {verdict.describe()}",
                )
            ], verdicts
    return [], verdicts


@ONE_EPOCH.declare(
    Invariant(
        "draws_distinct",
        "no item drawn twice in an epoch, by any ranks",
        "draws with replacement where the contract promises none, or ranks that each draw their own sample "
        "(lhotse's WeightedSimpleCutSampler draws from numpy's global generator in each process): an item trained "
        "on twice in an epoch",
        f"{BAD}:EachRankDrawsAlone",
        proven_under=WEIGHTED_WITHOUT_REPLACEMENT.name,
        promised_by=(WITHOUT_REPLACEMENT,),
    )
)
def check_draws_distinct(epoch: DrawnEpoch) -> list[Violation]:
    drawn = np.concatenate(epoch.observation.indices) if epoch.observation.indices else np.empty(0, np.int64)
    items, counts = np.unique(drawn, return_counts=True)
    again = items[counts > 1]
    if not again.size:
        return []
    by = [rank for rank, indices in enumerate(epoch.observation.indices) if np.isin(indices, again[:1]).any()]
    return [
        Violation(
            "draws_distinct",
            f"{counted(again.size, 'item')} {'was' if again.size == 1 else 'were'} drawn more than once in the epoch, "
            f"without replacement: {shorten(again)}; "
            f"item {int(again[0])} {int(counts[counts > 1][0])} times, by rank(s) {', '.join(map(str, by))}",
        )
    ]


@DECLARED(
    Invariant(
        "inclusion_follows_weights",
        "each item included as successive sampling by the weights includes it",
        "a sample without replacement that does not follow the weights: the weights used only to exclude items "
        "(every item of positive weight as likely), or a key per item of uniform x weight in place of "
        "Efraimidis-Spirakis' uniform^(1/weight)",
        f"{BAD}:WeightsAsMask",
        proven_under=WEIGHTED_WITHOUT_REPLACEMENT.name,
        where=Where.IN_PROCESS,
        promised_by=(WITHOUT_REPLACEMENT,),
    )
)
def check_inclusion(epochs: Sequence[DrawnEpoch], alpha: float) -> tuple[list[Violation], FrequencyVerdict]:
    """In how many of ``epochs`` each item was among all ranks' draws, against the probability
    that successive sampling by the weights includes it (``WeightedCase.inclusion_probabilities``),
    at false-alarm rate ``alpha`` (``harness.core.frequencies.inclusion_test``)."""
    size = epochs[0].case.dataset_size
    included = sum(np.isin(np.arange(size), np.concatenate(e.observation.indices or ([],))) for e in epochs)
    probabilities = epochs[0].case.inclusion_probabilities()
    verdict = inclusion_test(np.asarray(included, dtype=np.int64), len(epochs), probabilities, alpha)
    if not verdict.fails:
        return [], verdict
    return [
        Violation(
            "inclusion_follows_weights",
            f"the epochs' samples do not include the items as successive sampling by the weights does: "
            f"{verdict.describe()} (item {verdict.worst_item} is included with probability "
            f"{probabilities[verdict.worst_item]:.3f})",
        )
    ], verdict
