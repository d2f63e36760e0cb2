"""One drawn configuration of a weighted sampler: the weights, the ranks, the draws per rank."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sampler_conformance.core.case import Case
from sampler_conformance.subjects.common.reading import read_limit as limit_for

# The most items whose inclusion probabilities WeightedCase computes exactly (2^N sets of items).
# The most ranks a simulated case draws (each rank's frequency test takes its share of the budget).
MAX_SIMULATED_WORLD_SIZE = 8
MAX_EXACT_INCLUSION_ITEMS = 12


@dataclass(frozen=True)
class WeightedCase(Case):
    """Item ``i`` of ``dataset_size`` has weight ``weights[i]``; each of ``world_size`` ranks
    draws ``num_samples`` indices per epoch."""

    weights: tuple[float, ...] = ()
    num_samples: int = 0

    def __post_init__(self) -> None:
        if len(self.weights) != self.dataset_size:
            raise ValueError(f"{len(self.weights)} weights for N={self.dataset_size} items")

    @property
    def probabilities(self) -> np.ndarray:
        """What the weights promise over the whole dataset: w_i / sum(w)."""
        weights = np.asarray(self.weights, dtype=np.float64)
        return weights / weights.sum()

    @property
    def positive_items(self) -> int:
        return sum(w > 0 for w in self.weights)

    def inclusion_probabilities(self) -> np.ndarray:
        """What successive sampling promises of an epoch's W x num_samples draws without
        replacement, each by the weights of the items not yet drawn: the probability that item
        i is among them. Exact, from the probability of every set of items to be drawn first
        (2^N sets: N at most MAX_EXACT_INCLUSION_ITEMS)."""
        size, draws = self.dataset_size, self.world_size * self.num_samples
        if size > MAX_EXACT_INCLUSION_ITEMS or draws > self.positive_items:
            raise ValueError(f"no exact inclusion probabilities of {draws} draws from {self.describe()}")
        weights = [float(w) for w in self.weights]
        total = sum(weights)
        first = np.zeros(1 << size)  # first[s]: the probability that set s is drawn first
        first[0] = 1.0
        mass = np.zeros(1 << size)  # mass[s]: the weight of set s
        included = np.zeros(size)
        for drawn in range(1 << size):
            if drawn:
                lowest = (drawn & -drawn).bit_length() - 1
                mass[drawn] = mass[drawn & (drawn - 1)] + weights[lowest]
            chance = first[drawn]
            if chance == 0.0:
                continue
            if drawn.bit_count() == draws:
                included += [chance if drawn >> i & 1 else 0.0 for i in range(size)]
                continue
            left = total - mass[drawn]
            for item in range(size):
                if not drawn >> item & 1 and weights[item] > 0:
                    first[drawn | 1 << item] += chance * weights[item] / left
        return included

    def sampler_options(self) -> dict[str, Any]:
        return {"seed": self.seed, "num_samples": self.num_samples}

    def describe(self) -> str:
        shown = [round(w, 3) for w in self.weights] if len(self.weights) <= 12 else f"{len(self.weights)} weights"
        return (
            f"N={self.dataset_size}, W={self.world_size}, weights={shown}, num_samples={self.num_samples}, "
            f"seed={self.seed}, epoch={self.epoch}"
        )


def read_limit(case: WeightedCase) -> int:
    """Draws one rank may yield in an epoch before it counts as never stopping: four times
    num_samples or the dataset, whichever is larger (a sampler that ignores num_samples and
    draws a share of the dataset, or all of it, stops within it), and 64 more."""
    return limit_for(max(case.num_samples, case.dataset_size))
