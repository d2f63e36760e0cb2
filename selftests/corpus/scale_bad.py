"""Known-bads of the numeric edges that are not index samplers: each right at every size the
draws reach and wrong only past 2^24 items (weights or ids), certified with ``--scale`` by
``selftests/test_scale.py``, which asserts the exact set of failed invariants its
``@rejected(...)`` declares. (The index samplers' are in ``known_bad.py``.)"""

from __future__ import annotations

import torch

from sampler_conformance.adapters.torch_iterable import RankWorkerSplit
from sampler_conformance.adapters.torch_weighted import MULTINOMIAL_CATEGORIES, DistributedWeightedSampler

from .rejections import AT_THE_EDGES, WEIGHTED_EDGE_TEST, rejected


@rejected(WEIGHTED_EDGE_TEST, "weighted_runs", crashes=True, under="weighted", options=AT_THE_EDGES)
class MultinomialPastTheCap(DistributedWeightedSampler):
    """The weighted reference drawing with ``torch.multinomial`` over every item, as torch's
    ``WeightedRandomSampler`` and the wrappers around it do: past 2^24 items it raises
    "number of categories cannot exceed 2^24" (pytorch/pytorch #2576)."""

    def draws(self) -> torch.Tensor:
        total = self.num_samples * self.num_replicas
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        return torch.multinomial(self.weights, total, replacement=True, generator=generator)


@rejected(WEIGHTED_EDGE_TEST, "frequencies_match_weights", under="weighted", options=AT_THE_EDGES)
class ChunkedWithoutOffset(DistributedWeightedSampler):
    """The cap worked around in chunks of 2^24 items: each draw picks a chunk by its weight,
    then an item within it, but returns the item's index within its chunk (NVIDIA/physicsnemo
    #1846): nothing past 2^24 is ever drawn, and the first chunk's items take its draws."""

    def draws(self) -> torch.Tensor:
        total = self.num_samples * self.num_replicas
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        chunks = self.weights.split(MULTINOMIAL_CATEGORIES)
        masses = torch.stack([chunk.sum() for chunk in chunks])
        if total == 0 or float(masses.sum()) == 0:
            return super().draws()
        which = torch.multinomial(masses, total, replacement=True, generator=generator)
        drawn = torch.empty(total, dtype=torch.int64)
        for number, chunk in enumerate(chunks):
            picked = which == number
            if picked.any():
                drawn[picked] = torch.multinomial(chunk, int(picked.sum()), replacement=True, generator=generator)
        return drawn


@rejected("test_stream_at_the_numeric_edge", "exactly_once", under="stream", options=AT_THE_EDGES)
class BoundsThroughFloat32(RankWorkerSplit):
    """The stream's reference cutting the epoch's order into the ranks' parts at bounds made by
    ``torch.linspace``, whose default dtype is float32 ("torch.linspace is not suited to
    generate indices", Moodstocks/gtsrb.torch #7; pytorch/pytorch #4419): exact below 2^24,
    but the last bound, N = 2^24 + 1, rounds to 2^24, and the order's last item is never read."""

    def rank_items(self, order: list[int]) -> list[int]:
        bounds = torch.linspace(0, len(order), self.world_size + 1).long()
        return order[int(bounds[self.rank]) : int(bounds[self.rank + 1])]
