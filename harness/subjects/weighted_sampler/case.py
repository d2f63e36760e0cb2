"""One drawn configuration of a weighted sampler: the weights, the ranks, the draws per rank."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sampler_conformance.core.case import Case


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

    def sampler_options(self) -> dict[str, Any]:
        return {"seed": self.seed, "num_samples": self.num_samples}

    def describe(self) -> str:
        shown = [round(w, 3) for w in self.weights] if len(self.weights) <= 12 else f"{len(self.weights)} weights"
        return (
            f"N={self.dataset_size}, W={self.world_size}, weights={shown}, num_samples={self.num_samples}, "
            f"seed={self.seed}, epoch={self.epoch}"
        )
