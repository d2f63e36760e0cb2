"""Known-bad weighted samplers: each is the reference (``adapters/torch_weighted.py``,
``DistributedWeightedSampler``) with one bug a real project shipped, named in its docstring.

Each is called as ``Attr(weights, num_replicas=W, rank=r, num_samples=n, seed=s)``;
``selftests/test_weighted.py`` certifies each and asserts its exact set of failed invariants.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from sampler_conformance.adapters.torch_weighted import DistributedWeightedSampler, PartitionedWeightedSampler


class WithoutReplacement(DistributedWeightedSampler):
    """Draws without replacement, as ``WeightedRandomSampler(replacement=False)`` does: torch
    refuses more draws than items of non-zero weight.

    Rejected by: the sampler runs without crashing."""

    def draws(self) -> torch.Tensor:
        total = self.num_samples * self.num_replicas
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        return torch.multinomial(self.weights, total, replacement=False, generator=generator)


class TensorDraws(DistributedWeightedSampler):
    """Yields the drawn tensor's elements, 0-d tensors, not ints (no ``.tolist()``).

    Rejected by: draws are int indices."""

    def __iter__(self) -> Iterator[int]:
        return iter(self.draws()[self.rank :: self.num_replicas])


class FlooredWeights(DistributedWeightedSampler):
    """Floors every weight at a thousandth of the largest, "so that no item starves": the
    items the weights exclude come back.

    Rejected by: an item of weight 0 is never drawn."""

    def __init__(self, weights, num_replicas, rank, num_samples, seed=0) -> None:
        super().__init__(weights, num_replicas, rank, num_samples, seed)
        self.weights = self.weights.clamp(min=float(self.weights.max()) / 1000)


class LenCountsEveryRank(DistributedWeightedSampler):
    """``len()`` counts the draws of every rank, as a wrapper reporting its inner sampler's
    length does (pytorch/vision #9127: ``len()`` disagreeing with what is yielded).

    Rejected by: num_samples draws per rank per epoch, as len() says."""

    def __len__(self) -> int:
        return self.num_samples * self.num_replicas


class IgnoresNumSamples(DistributedWeightedSampler):
    """Sizes the epoch by the dataset, ceil(N/W) draws per rank whatever ``num_samples`` says
    (``len()`` says the same), as a wrapper that shards an index sampler's epoch does. It
    stops, so the count is wrong, nothing else: not a sampler that never stops.

    Rejected by: num_samples draws per rank per epoch, as len() says."""

    def __init__(self, weights, num_replicas, rank, num_samples, seed=0) -> None:
        super().__init__(weights, num_replicas, rank, -(-len(weights) // num_replicas), seed)


class EveryRankSameStream(DistributedWeightedSampler):
    """Every rank keeps the first ``num_samples`` draws: a ``WeightedRandomSampler`` under DDP
    with the same seed on every rank and no split (Lightning-AI/pytorch-lightning #3716).

    Rejected by: the ranks draw different streams."""

    def __iter__(self) -> Iterator[int]:
        return iter(self.draws()[: self.num_samples].tolist())


class GlobalGenerator(DistributedWeightedSampler):
    """Draws from the process's global generator, as MONAI's ``DistributedWeightedRandomSampler``
    does with its default ``generator=None``: the seed decides nothing.

    Rejected by: the same stream for the same seed and epoch."""

    def draws(self) -> torch.Tensor:
        total = self.num_samples * self.num_replicas
        if total == 0:
            return torch.empty(0, dtype=torch.int64)
        return torch.multinomial(self.weights, total, replacement=True)


class GlobalGeneratorWithoutSetEpoch(GlobalGenerator):
    """No ``set_epoch``, and every pass drawn from the process's global generator, as a
    ``WeightedRandomSampler`` with its default ``generator=None`` (torch's own docs example):
    each pass differs from the one before, and a run of the script repeats none of them.

    Rejected by: the same stream for the same seed and epoch (without set_epoch, pass k of two
    samplers built alike)."""

    set_epoch = None  # type: ignore[assignment]


class UnshardedGlobalStream(DistributedWeightedSampler):
    """A ``WeightedRandomSampler`` kept as it is under DDP: every rank draws ``num_samples``
    from the process's global generator, knowing nothing of its rank
    (Lightning-AI/pytorch-lightning #3716). Ranks simulated in one process draw one after
    another from one generator, so they differ; the processes of a job start that generator
    alike, and draw the same stream.

    Rejected by: the ranks draw different streams (in real groups)."""

    def __iter__(self) -> Iterator[int]:
        if self.num_samples == 0:
            return iter([])
        return iter(torch.multinomial(self.weights, self.num_samples, replacement=True).tolist())


class EpochNotPassedOn(DistributedWeightedSampler):
    """Has ``set_epoch`` but keeps it from the generator, as ``DistributedSamplerWrapper``
    keeps it from the sampler it wraps (Lightning-AI/pytorch-lightning #21454).

    Rejected by: a new stream after set_epoch."""

    def set_epoch(self, epoch: int) -> None:
        self.wrapper_epoch = epoch


class SeedIgnored(DistributedWeightedSampler):
    """Seeds its generator with 0 whatever seed it is given (huggingface/transformers #11406).

    Rejected by: another seed, another stream."""

    def __init__(self, weights, num_replicas, rank, num_samples, seed=0) -> None:
        super().__init__(weights, num_replicas, rank, num_samples, 0)


class PartitionWeighted(DistributedWeightedSampler):
    """Each rank draws over its own part of the data (items ``r, r + W, ...``, wrapping as
    DistributedSampler pads), by that part's weights normalised on their own, as MONAI's
    ``DistributedWeightedRandomSampler`` does (Project-MONAI/MONAI #1742): items in lighter
    parts are over-drawn against the weights over the whole dataset.

    Rejected by: draws follow the weights."""

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


class UnshuffledPartition(PartitionedWeightedSampler):
    """Draws over the partition an unshuffled DistributedSampler gives (items r, r + W, ...),
    whatever the seed and the epoch: the shuffle never reaches the partition, so a rank draws
    over items that are not its own (certified under ``weighted_partition``).

    Rejected by: each rank's draws follow its partition's weights."""

    def partition(self) -> list[int]:
        size = self.weights.numel()
        padded = -(-size // self.num_replicas) * self.num_replicas
        return [i % size for i in range(self.rank, padded, self.num_replicas)]
