"""One drawn configuration of a data loader: the instances, the ranks, the global batch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sampler_conformance.core.case import Case

# The DP sizes +elastic reads the same case at: each divides a global batch drawn a multiple of their largest.
ELASTIC_WORLD_SIZES = (1, 2, 4)


@dataclass(frozen=True)
class LoaderCase(Case):
    """``dataset_size`` instances read by ``world_size`` data-parallel ranks in global batches
    of ``global_batch_size`` instances, a multiple of ``world_size`` (each rank's batch is the
    global batch divided by the DP size), through ``num_workers`` loader workers."""

    global_batch_size: int = 1
    num_workers: int = 0

    def __post_init__(self) -> None:
        if self.global_batch_size < 1 or self.global_batch_size % self.world_size:
            raise ValueError(f"global_batch_size={self.global_batch_size} is not a multiple of W={self.world_size}")

    @property
    def rank_batch_size(self) -> int:
        return self.global_batch_size // self.world_size

    @property
    def global_batches(self) -> int:
        """The whole global batches of an epoch: an incomplete final one is left out."""
        return self.dataset_size // self.global_batch_size

    def loader_options(self) -> dict[str, Any]:
        return {"global_batch_size": self.global_batch_size, "seed": self.seed, "num_workers": self.num_workers}

    def sizes(self) -> dict[str, int]:
        """Its sizes, the global batch's among them (the summary's "batch size")."""
        return {**super().sizes(), "batch_size": self.global_batch_size}

    def describe(self) -> str:
        workers = f", num_workers={self.num_workers}" if self.num_workers else ""
        return (
            f"N={self.dataset_size}, W={self.world_size}, global_batch_size={self.global_batch_size}{workers}, "
            f"seed={self.seed}, epoch={self.epoch}"
        )
