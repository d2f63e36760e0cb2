"""Things that are not samplers the suite can certify: targets of bad ``--sampler`` specs,
and a sampler that raises, to prove faults are reported per rank."""

from __future__ import annotations

import os
from typing import Any, Iterator

from .parts import PartsSampler

NOT_A_SAMPLER = 42  # --sampler=...:NOT_A_SAMPLER names something that cannot be called

SHARD_ERROR = "shard index file for this rank is missing"
IMPORT_ERROR = "this module needs a configuration file that is not there"  # raised by broken_import


class RankFromEnvironment(PartsSampler):
    """Takes its rank from RANK/WORLD_SIZE (detectron2/mmengine style), not from keyword
    arguments: the plug must refuse it with a hint to wrap it in a factory."""

    def __init__(self, dataset: Any, shuffle: bool = True, seed: int = 0) -> None:
        super().__init__(dataset, int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("RANK", 0)), shuffle, seed)


class RaisesOnRankOne(PartsSampler):
    """Rank 1's __iter__ raises, as a sampler reading a per-rank shard file would."""

    FAILING_RANK = 1

    def __iter__(self) -> Iterator[int]:
        if self.rank == self.FAILING_RANK:
            raise FileNotFoundError(SHARD_ERROR)
        return super().__iter__()
