"""Known-bad weighted samplers: each is the reference (``adapters/torch_weighted.py``,
``DistributedWeightedSampler``) with one bug a real project shipped, named in its docstring.

Each is called as ``Attr(weights, num_replicas=W, rank=r, num_samples=n, seed=s)``;
``selftests/test_weighted.py`` certifies each and asserts the exact set of failed invariants
its ``@rejected(...)`` declares.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from sampler_conformance.adapters.torch_weighted import (
    DistinctWeightedSampler,
    DistributedWeightedSampler,
    PartitionedWeightedSampler,
)

from .rejections import every, rejected


@rejected(
    "test_weighted_runs",
    "weighted_runs",
    crashes=True,
    sometimes={
        "zero_weight_never_drawn": "without replacement, torch.multinomial fills draws past the items of positive "
        "weight with items of weight 0 (weights=[0.0, 1.0], 2 draws), where it does not refuse them"
    },
    under="weighted",
)
class WithoutReplacement(DistributedWeightedSampler):
    """Draws without replacement, as ``WeightedRandomSampler(replacement=False)`` does: torch
    refuses more draws than items of non-zero weight."""

    def draws(self) -> torch.Tensor:
        total = self.num_samples * self.num_replicas
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        return torch.multinomial(self.weights, total, replacement=False, generator=generator)


@rejected("test_weighted_epoch", "drawn_indices", under="weighted")
class TensorDraws(DistributedWeightedSampler):
    """Yields the drawn tensor's elements, 0-d tensors, not ints (no ``.tolist()``)."""

    def __iter__(self) -> Iterator[int]:
        return iter(self.draws()[self.rank :: self.num_replicas])


@rejected(
    "test_weighted_epoch",
    "zero_weight_never_drawn",
    {"frequencies_match_weights": "the floor lifts the smallest positive weights too (weights spread over 10^6)"},
    profile="dev",  # weights spread that far are drawn in few cases,
    under="weighted",
)
class FlooredWeights(DistributedWeightedSampler):
    """Floors every weight at a thousandth of the largest, "so that no item starves": the
    items the weights exclude come back."""

    def __init__(self, weights, num_replicas, rank, num_samples, seed=0) -> None:
        super().__init__(weights, num_replicas, rank, num_samples, seed)
        self.weights = self.weights.clamp(min=float(self.weights.max()) / 1000)


@rejected("test_weighted_epoch", "draw_counts", under="weighted")
class LenCountsEveryRank(DistributedWeightedSampler):
    """``len()`` counts the draws of every rank, as a wrapper reporting its inner sampler's
    length does (pytorch/vision #9127: ``len()`` disagreeing with what is yielded)."""

    def __len__(self) -> int:
        return self.num_samples * self.num_replicas


@rejected(
    "test_weighted_epoch",
    "draw_counts",
    sometimes={
        "ranks_draw_apart": "a rank draws ceil(N/W) where the test asks num_samples=40 to tell the ranks' "
        "streams apart: a few draws per rank can coincide"
    },
    under="weighted",
)
class IgnoresNumSamples(DistributedWeightedSampler):
    """Sizes the epoch by the dataset, ceil(N/W) draws per rank whatever ``num_samples`` says
    (``len()`` says the same), as a wrapper that shards an index sampler's epoch does. It
    stops, so the count is wrong, nothing else: not a sampler that never stops."""

    def __init__(self, weights, num_replicas, rank, num_samples, seed=0) -> None:
        super().__init__(weights, num_replicas, rank, -(-len(weights) // num_replicas), seed)


@rejected(
    "test_ranks_draw_apart",
    "ranks_draw_apart",
    {"frequencies_match_weights": "W copies of n draws are not W x n draws: the counts stray W times as far"},
    under="weighted",
)
class EveryRankSameStream(DistributedWeightedSampler):
    """Every rank keeps the first ``num_samples`` draws: a ``WeightedRandomSampler`` under DDP
    with the same seed on every rank and no split (Lightning-AI/pytorch-lightning #3716)."""

    def __iter__(self) -> Iterator[int]:
        return iter(self.draws()[: self.num_samples].tolist())


@rejected(
    "test_ranks_draw_apart",
    "ranks_draw_apart",
    sometimes={
        "frequencies_match_weights": "ranks alike in pairs double their draws' counts: the counts stray further "
        "than W x n independent draws, by more than the test can tell at small W"
    },
    under="weighted",
)
class SeededByLocalRank(DistributedWeightedSampler):
    """Each rank draws its own stream from a generator seeded with ``seed + epoch`` and its
    *local* rank, the GPU index on its node (``LOCAL_RANK``), here 2 GPUs a node: ranks r and
    r + 2 draw alike, so every node trains on the same data as the others."""

    def draws(self) -> torch.Tensor:
        if self.num_samples == 0:
            return torch.empty(0, dtype=torch.int64)
        local_rank = self.rank % 2
        generator = torch.Generator().manual_seed((self.seed + self.epoch) * 2 + local_rank)
        return torch.multinomial(self.weights, self.num_samples, replacement=True, generator=generator)

    def __iter__(self) -> Iterator[int]:
        return iter(self.draws().tolist())


@rejected("test_weighted_deterministic", "weighted_deterministic", under="weighted")
class GlobalGenerator(DistributedWeightedSampler):
    """Draws from the process's global generator, as MONAI's ``DistributedWeightedRandomSampler``
    does with its default ``generator=None``: the seed decides nothing."""

    def draws(self) -> torch.Tensor:
        total = self.num_samples * self.num_replicas
        if total == 0:
            return torch.empty(0, dtype=torch.int64)
        return torch.multinomial(self.weights, total, replacement=True)


@rejected(
    "test_weighted_deterministic",
    "weighted_deterministic",
    under="weighted",
)
class GlobalGeneratorWithoutSetEpoch(GlobalGenerator):
    """No ``set_epoch``, and every pass drawn from the process's global generator, as a
    ``WeightedRandomSampler`` with its default ``generator=None`` (torch's own docs example):
    each pass differs from the one before, and a run of the script repeats none of them."""

    set_epoch = None  # type: ignore[assignment]


@rejected(
    "test_ranks_draw_apart",
    "ranks_draw_apart",
    {"weighted_deterministic": "the global generator: a fresh sampler draws on from wherever the process is"},
    under="weighted",
)
class UnshardedGlobalStream(DistributedWeightedSampler):
    """A ``WeightedRandomSampler`` kept as it is under DDP: every rank draws ``num_samples``
    from the process's global generator, knowing nothing of its rank
    (Lightning-AI/pytorch-lightning #3716). Ranks simulated in one process draw one after
    another from one generator, so they differ; the processes of a job start that generator
    alike, and draw the same stream."""

    def __iter__(self) -> Iterator[int]:
        if self.num_samples == 0:
            return iter([])
        return iter(torch.multinomial(self.weights, self.num_samples, replacement=True).tolist())


@rejected("test_weighted_reshuffles", "weighted_reshuffles", under="weighted")
class EpochNotPassedOn(DistributedWeightedSampler):
    """Has ``set_epoch`` but keeps it from the generator, as ``DistributedSamplerWrapper``
    keeps it from the sampler it wraps (Lightning-AI/pytorch-lightning #21454)."""

    def set_epoch(self, epoch: int) -> None:
        self.wrapper_epoch = epoch


@rejected("test_weighted_reshuffles", "weighted_reshuffles", under="weighted")
class EpochOnRankZeroOnly(DistributedWeightedSampler):
    """Keeps the epoch only on rank 0, the rank that logs it, as a sampler whose ``set_epoch``
    is guarded by ``if is_main_process``: every other rank draws epoch 0's stream every epoch
    while rank 0 reshuffles, so comparing all ranks at once sees a change."""

    def set_epoch(self, epoch: int) -> None:
        if self.rank == 0:
            self.epoch = epoch


@rejected("test_weighted_seed_effective", "weighted_seed_effective", under="weighted")
class SeedIgnored(DistributedWeightedSampler):
    """Seeds its generator with 0 whatever seed it is given (huggingface/transformers #11406)."""

    def __init__(self, weights, num_replicas, rank, num_samples, seed=0) -> None:
        super().__init__(weights, num_replicas, rank, num_samples, 0)


@rejected(
    "test_frequencies_match_weights",
    "frequencies_match_weights",
    sometimes=every(
        "ranks_draw_apart weighted_reshuffles weighted_seed_effective",
        "a part that holds one item of positive weight draws it alone, at every epoch and seed, and as every "
        "rank whose part wraps onto it does",
    ),
    under="weighted",
)
class PartitionWeighted(DistributedWeightedSampler):
    """Each rank draws over its own part of the data (items ``r, r + W, ...``, wrapping as
    DistributedSampler pads), by that part's weights normalised on their own, as MONAI's
    ``DistributedWeightedRandomSampler`` does (Project-MONAI/MONAI #1742): items in lighter
    parts are over-drawn against the weights over the whole dataset."""

    def __iter__(self) -> Iterator[int]:
        if self.num_samples == 0:
            return iter([])
        size = self.weights.numel()
        padded = -(-size // self.num_replicas) * self.num_replicas
        part = torch.arange(self.rank, padded, self.num_replicas) % size
        weights = self.weights[part]
        if float(weights.sum()) == 0:  # a part of weight 0 only: draw over the whole dataset
            part, weights = torch.arange(size), self.weights
        generator = torch.Generator().manual_seed(self.seed + self.epoch + 7919 * self.rank)
        drawn = torch.multinomial(weights, self.num_samples, replacement=True, generator=generator)
        return iter(part[drawn].tolist())


@rejected(
    "test_frequencies_in_partition",
    "frequencies_in_partition",
    sometimes=every(
        "weighted_reshuffles weighted_seed_effective",
        "a partition that holds one item of positive weight draws it alone at every epoch and seed, where the "
        "shuffled partition would move",
    ),
    under="weighted_partition",
)
class UnshuffledPartition(PartitionedWeightedSampler):
    """Draws over the partition an unshuffled DistributedSampler gives (items r, r + W, ...),
    whatever the seed and the epoch: the shuffle never reaches the partition, so a rank draws
    over items that are not its own (certified under ``weighted_partition``)."""

    def partition(self) -> list[int]:
        size = self.weights.numel()
        padded = -(-size // self.num_replicas) * self.num_replicas
        return [i % size for i in range(self.rank, padded, self.num_replicas)]


# ---- contract `weighted_without_replacement` ----------------------------------------


@rejected(
    "test_weighted_epoch",
    "draws_distinct",
    {
        "inclusion_follows_weights": "samples that overlap hold fewer distinct items than W x num_samples, so "
        "items are included less often than successive sampling includes them"
    },
    under="weighted_without_replacement",
)
class EachRankDrawsAlone(DistinctWeightedSampler):
    """Each rank draws its own num_samples without replacement, from a generator of its own,
    as lhotse's WeightedSimpleCutSampler does in each process (numpy's global generator): the
    ranks' samples overlap, so an item is trained on twice in an epoch."""

    def draws(self) -> torch.Tensor:
        if self.num_samples == 0:
            return torch.empty(0, dtype=torch.int64)
        generator = torch.Generator().manual_seed((self.seed + self.epoch) * self.num_replicas + self.rank)
        drawn = torch.multinomial(self.weights, self.num_samples, replacement=False, generator=generator)
        return drawn.repeat_interleave(self.num_replicas)  # this rank's draws at r, r + W, ...


# Under quick: five draws of weights are too few for the inclusion test's power at a uniform sample.
@rejected(
    "test_inclusion_follows_weights", "inclusion_follows_weights", under="weighted_without_replacement", profile="quick"
)
class WeightsAsMask(DistinctWeightedSampler):
    """Uses the weights only to exclude: a uniform sample of the items of positive weight, as
    though each were as heavy as the others."""

    def __init__(self, weights, num_replicas, rank, num_samples, seed=0) -> None:
        super().__init__(weights, num_replicas, rank, num_samples, seed)
        self.weights = (self.weights > 0).double()
