"""The checks of a weighted mix of sources (``stream_mix``) that read each (rank, worker) pair's
own sequence: which source each of its items came from, in the order it read them.

A pair's sequence is its batches in the order the loader delivered them: a DataLoader takes
each worker's batches in that worker's own order.
"""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np

from sampler_conformance.core.evidence import Violation, shorten
from sampler_conformance.core.frequencies import FrequencyVerdict, anytime_streams_test
from sampler_conformance.core.invariants import Declared, Invariant, Where

from .checks import BAD, MIX, worker_name
from .contracts import MIXED_BY_WEIGHT
from .runs import StreamEpoch

DECLARED = Declared()

# Two independent pairs draw the same sequence of L sources with probability q**L, where q is
# the sum of the squared probabilities: judged only where that is at most this, per pair.
CHANCE_OF_SAME_SOURCES = 1e-12


def source_of(epoch: StreamEpoch, ids: np.ndarray) -> np.ndarray:
    """The source of each id (-1 for an id outside the dataset, which no_foreign_items charges)."""
    ends = np.cumsum(epoch.case.source_sizes)
    sources = np.searchsorted(ends, ids, side="right")
    return np.where((ids >= 0) & (ids < epoch.case.dataset_size), sources, -1)


def pair_sequences(epoch: StreamEpoch) -> dict[str, np.ndarray]:
    """Each (rank, worker) pair's sources, in the order it read them, by the pair's name."""
    sequences: dict[str, list[np.ndarray]] = {}
    for rank, (batches, workers) in enumerate(zip(epoch.observation.batches or (), epoch.workers, strict=True)):
        for ids, worker in zip(batches, workers, strict=True):
            sequences.setdefault(worker_name(rank, worker), []).append(source_of(epoch, ids))
    return {name: np.concatenate(parts) for name, parts in sequences.items()}


@DECLARED(
    Invariant(
        "mix_frequencies",
        "sources drawn by their weights",
        "weights that never reach the draw: sources read in turn or in proportion to their sizes, the weights "
        "applied to the wrong sources, or a source of weight 0 read",
        f"{BAD}:MixIgnoresWeights",
        proven_under=MIX,
        where=Where.IN_PROCESS,
        promised_by=(MIXED_BY_WEIGHT,),
    )
)
def check_mix_frequencies(epoch: StreamEpoch, alpha: float) -> tuple[list[Violation], FrequencyVerdict]:
    """Each pair's draws against the weights, at false-alarm rate ``alpha``, by a test valid
    whenever each pair stops, the draw that ended it unseen, and however the pairs depend on
    each other (``anytime_streams_test``: the mean of the pairs' evidence). Pooling the pairs'
    counts would need them independent, as the contract promises but datasets' and litdata's
    mixes are not (mix_pairs_independent): one sequence's chance deviation, drawn by every
    rank, would count as many times as there are ranks."""
    probabilities = np.asarray(epoch.case.probabilities)
    read = [np.bincount(s[s >= 0], minlength=probabilities.size) for s in pair_sequences(epoch).values()]
    # A pair that read nothing counts too (no draws): which pairs read is not for the data to choose.
    idle = [np.zeros(probabilities.size, dtype=np.int64)] * max(epoch.case.streams - len(read), 0)
    by_pair = np.array(read + idle, dtype=np.int64).reshape(-1, probabilities.size)
    verdict = anytime_streams_test(by_pair, probabilities, alpha)
    if not verdict.fails:
        return [], verdict
    counts = by_pair.sum(axis=0)
    per_source = ", ".join(
        f"source {k}: {int(c)} (weight {w:g})" for k, (c, w) in enumerate(zip(counts, epoch.case.weights, strict=True))
    )
    return [
        Violation(
            "mix_frequencies",
            f"the sources were not drawn by their weights: items read per source {per_source}; {verdict.describe()}",
        )
    ], verdict


def same_sources_chance(epoch: StreamEpoch, length: int) -> float:
    """The chance that two independent pairs draw the same ``length`` sources."""
    return math.fsum(p * p for p in epoch.case.probabilities) ** length


@DECLARED(
    Invariant(
        "mix_pairs_independent",
        "every pair draws its own sources",
        "the mix's generator seeded alike in every rank and worker, so that all draw the same sources in the same "
        "order and every global batch leans the same way at once (huggingface/datasets #7567)",
        f"{BAD}:MixSameEverywhere",
        proven_under=MIX,
        where=Where.BOTH,
        promised_by=(MIXED_BY_WEIGHT,),
    )
)
def check_pairs_independent(epoch: StreamEpoch) -> list[Violation]:
    """No two pairs draw the same sources in the same order over their common length, where
    independent pairs would do so with probability at most CHANCE_OF_SAME_SOURCES."""
    for (first, a), (second, b) in combinations(pair_sequences(epoch).items(), 2):
        length = min(a.size, b.size)
        if same_sources_chance(epoch, length) <= CHANCE_OF_SAME_SOURCES and np.array_equal(a[:length], b[:length]):
            return [
                Violation(
                    "mix_pairs_independent",
                    f"{first} and {second} drew the same {length} sources in the same order ({shorten(a[:length])}), "
                    f"which independent draws by weights {list(epoch.case.weights)} do with probability "
                    f"{same_sources_chance(epoch, length):.2g}: the mix's generator is seeded alike in both, so every "
                    f"global batch leans to the same sources at once",
                )
            ]
    return []


def pairs_comparable(epoch: StreamEpoch) -> bool:
    """At least two pairs read enough to tell independent draws from one shared sequence."""
    lengths = sorted((s.size for s in pair_sequences(epoch).values()), reverse=True)
    return len(lengths) >= 2 and same_sources_chance(epoch, lengths[1]) <= CHANCE_OF_SAME_SOURCES
