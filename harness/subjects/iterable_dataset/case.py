"""One drawn configuration of a streaming dataset: the data's layout in shards, the ranks, and
the DataLoader the suite puts over each rank's dataset."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from sampler_conformance.core.case import Case

SEED_LIMIT = 2**32  # seeds are drawn from [0, SEED_LIMIT): what every library's generators take


@dataclass(frozen=True)
class StreamCase(Case):
    """``dataset_size`` ids laid out in shards of ``shard_sizes`` (in id order), read by
    ``world_size`` ranks, each through a DataLoader with ``num_workers`` workers that batches
    ``batch_size`` items (``drop_last`` is the DataLoader's: each worker drops its own last
    partial batch, as torch does for an IterableDataset).

    A mix of sources (``stream_mix``) lays the ids out in ``source_sizes`` consecutive sources
    drawn from with probabilities ``weights``; its shards lie each within one source."""

    shard_sizes: tuple[int, ...] = ()
    num_workers: int = 0
    persistent_workers: bool = False
    shuffle: bool = True
    batch_size: int = 1
    drop_last: bool = False
    source_sizes: tuple[int, ...] = ()  # empty: not a mix
    weights: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if sum(self.shard_sizes) != self.dataset_size:
            raise ValueError(f"shards of sizes {self.shard_sizes} do not hold N={self.dataset_size} items")
        if self.source_sizes and (
            sum(self.source_sizes) != self.dataset_size or len(self.weights) != len(self.source_sizes)
        ):
            raise ValueError(
                f"sources of sizes {self.source_sizes} and weights {self.weights} do not fit N={self.dataset_size}"
            )

    @property
    def sources(self) -> tuple[range, ...]:
        """The ids of each source of a mix: consecutive ranges, the first starting at 0."""
        return _ranges(self.source_sizes)

    @property
    def probabilities(self) -> tuple[float, ...]:
        """The weights of a mix's sources, normalised."""
        total = sum(self.weights)
        return tuple(w / total for w in self.weights)

    @property
    def shards(self) -> tuple[range, ...]:
        """The ids of each shard: consecutive ranges, the first shard starting at 0."""
        return _ranges(self.shard_sizes)

    @property
    def workers(self) -> int:
        """The streams a rank's dataset is split into: its workers, or the rank itself without any."""
        return max(self.num_workers, 1)

    @property
    def streams(self) -> int:
        """The (rank, worker) pairs that read the data: W x workers."""
        return self.world_size * self.workers

    def factory_options(self, workdir: str) -> dict[str, Any]:
        """What the factory is called with besides N, rank and world size (the plug keeps what it takes)."""
        options: dict[str, Any] = {
            "seed": self.seed,
            "shuffle": self.shuffle,
            "num_shards": len(self.shard_sizes),
            "shards": self.shards,
            "batch_size": self.batch_size,
            "workdir": workdir,
        }
        if self.source_sizes:
            options.update(sources=self.sources, weights=self.weights)
        return options

    def loader_seed(self, rank: int, reading: int) -> int:
        """The seed of rank ``rank``'s DataLoader generator in reading ``reading`` of this case
        (``loading.loader_generator``): from its description, the same on every run."""
        digest = hashlib.sha256(f"{self.describe()}, rank={rank}, reading={reading}".encode()).digest()
        return int.from_bytes(digest[:8], "little")

    def describe(self) -> str:
        sizes = list(self.shard_sizes) if len(self.shard_sizes) <= 12 else f"{len(self.shard_sizes)} shards"
        mix = f", sources={list(self.source_sizes)}, weights={list(self.weights)}" if self.source_sizes else ""
        return (
            f"N={self.dataset_size}, W={self.world_size}, shards={sizes}, num_workers={self.num_workers}, "
            f"persistent_workers={self.persistent_workers}, batch_size={self.batch_size}, drop_last={self.drop_last}, "
            f"shuffle={self.shuffle}, seed={self.seed}, epoch={self.epoch}{mix}"
        )


def one_shard_per_rank(size: int, world_size: int, *, mixes: bool, **fields: Any) -> StreamCase:
    """``size`` ids in a shard per rank, in each of two sources of half the ids weighted alike
    where the contract mixes (what the cost probe and the numeric edge read)."""
    sources = (size - size // 2, size // 2) if mixes else (size,)
    return StreamCase(
        dataset_size=size,
        world_size=world_size,
        shard_sizes=tuple(part for source in sources for part in _split(source, world_size)),
        source_sizes=sources if mixes else (),
        weights=(1.0,) * len(sources) if mixes else (),
        **fields,
    )


def _split(size: int, parts: int) -> tuple[int, ...]:
    """``size`` in ``parts`` parts that differ by at most one, the larger first."""
    return tuple(size // parts + (part < size % parts) for part in range(parts))


def _ranges(sizes: tuple[int, ...]) -> tuple[range, ...]:
    """Consecutive ranges of ``sizes`` ids, the first starting at 0."""
    ends = list(accumulate(sizes))
    return tuple(range(end - size, end) for end, size in zip(ends, sizes, strict=True))
