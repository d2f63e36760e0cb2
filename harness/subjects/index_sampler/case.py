"""One drawn configuration of a distributed index sampler (or a batch sampler over its indices)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sampler_conformance.core.case import Case


@dataclass(frozen=True)
class IndexCase(Case):
    """Everything that decides which indices every rank gets: the neutral case and the sampler's
    options (``batch_size`` builds a batch sampler, and batches a loader's reading)."""

    shuffle: bool = True
    drop_last: bool = False
    batch_size: int = 1

    def sampler_options(self, yields_batches: bool = False) -> dict[str, Any]:
        options = {"shuffle": self.shuffle, "seed": self.seed, "drop_last": self.drop_last}
        if yields_batches:  # batch samplers are built with the batch size
            options["batch_size"] = self.batch_size
        return options

    def describe(self) -> str:
        return (
            f"N={self.dataset_size}, W={self.world_size}, shuffle={self.shuffle}, "
            f"seed={self.seed}, epoch={self.epoch}, drop_last={self.drop_last}, "
            f"batch_size={self.batch_size}"
        )
