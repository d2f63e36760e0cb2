"""One drawn configuration of a distributed index sampler (or a batch sampler over its indices)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sampler_conformance.core.case import Case

if TYPE_CHECKING:
    from .contracts import SamplerContract


@dataclass(frozen=True)
class IndexCase(Case):
    """Everything that decides which indices every rank gets: the neutral case and the sampler's
    options (``batch_size`` builds a batch sampler, and batches a loader's reading)."""

    shuffle: bool = True
    drop_last: bool = False
    batch_size: int = 1
    repeats: int = 1  # G: the copies of each selected index (contracts of repeated groups)

    def sampler_options(self, contract: SamplerContract) -> dict[str, Any]:
        options: dict[str, Any] = {"shuffle": self.shuffle, "seed": self.seed, "drop_last": self.drop_last}
        if contract.yields_batches:  # batch samplers are built with the batch size
            options["batch_size"] = self.batch_size
        if contract.repeats:
            options["repeats"] = self.repeats
        return options

    def describe(self) -> str:
        return (
            f"N={self.dataset_size}, W={self.world_size}, shuffle={self.shuffle}, "
            f"seed={self.seed}, epoch={self.epoch}, drop_last={self.drop_last}, "
            f"batch_size={self.batch_size}" + (f", repeats={self.repeats}" if self.repeats != 1 else "")
        )
