"""One drawn configuration of a distributed sampler, and what the ranks made of it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Case:
    """Everything that decides which indices every rank gets."""

    dataset_size: int
    world_size: int
    shuffle: bool = True
    seed: int = 0
    epoch: int | None = None  # None: set_epoch is never called
    drop_last: bool = False
    batch_size: int = 1

    def sampler_options(self) -> dict[str, Any]:
        return {"shuffle": self.shuffle, "seed": self.seed, "drop_last": self.drop_last}

    def with_(self, **changes: Any) -> "Case":
        return replace(self, **changes)

    def describe(self) -> str:
        return (
            f"N={self.dataset_size}, W={self.world_size}, shuffle={self.shuffle}, "
            f"seed={self.seed}, epoch={self.epoch}, drop_last={self.drop_last}, "
            f"batch_size={self.batch_size}"
        )


@dataclass(frozen=True)
class Observation:
    """What every rank yielded for one case: indices and ``len(sampler)`` per rank."""

    case: Case
    indices: tuple[np.ndarray, ...]
    reported_lengths: tuple[int, ...]

    @property
    def lengths(self) -> tuple[int, ...]:
        return tuple(len(a) for a in self.indices)

    def global_order(self) -> np.ndarray | None:
        """Q with Q[i] = rank (i mod W)'s item (i div W); None if the ranks' lengths differ."""
        lengths = set(self.lengths)
        if len(lengths) != 1:
            return None
        if not self.indices:
            return np.empty(0, dtype=np.int64)
        return np.stack(self.indices, axis=1).reshape(-1)
