"""The references of the index sampler's batch contracts, built on torch alone.

    sampler_conformance.adapters.torch_batches:per_rank       contract rank_batches   (the reference)
    sampler_conformance.adapters.torch_batches:per_rank_blocks contract rank_blocks   (the reference)
    sampler_conformance.adapters.torch_batches:WholeBatches   contract batch          (the reference)
    sampler_conformance.adapters.torch_batches:RepeatedGroups contract groups         (the reference)
    sampler_conformance.adapters.torch_batches:LabelGroups    contract labels         (the reference)
    sampler_conformance.adapters.torch_batches:AspectRatioBatches contract aspect_ratio (the reference)

``per_rank`` is what ``DataLoader(dataset, batch_size=B, sampler=DistributedSampler(dataset,
...))`` reads on rank r, as one batch sampler: torch's ``BatchSampler`` over torch's
``DistributedSampler``, both given ``drop_last``. The loader's training loop calls
``set_epoch`` on the DistributedSampler; here the batch sampler passes it on.

``WholeBatches`` is accelerate's layout (``BatchSamplerShard`` with its defaults) on torch
alone: one ``BatchSampler`` over the dataset's order, or over a permutation drawn from
``seed + epoch``, the same on every rank; rank r reads whole batches r, r+W, ..., and the
last round is completed from the first batches, so every rank reads as many.

``RepeatedGroups`` is what trl's GRPO trainer reads (``RepeatSampler`` in a DataLoader of
batch size B, sharded by accelerate), on torch alone: of the same order, each generation batch
takes W x B / G indices and holds G copies of each in a row, dealt out as WholeBatches deals
its batches; round t of the ranks' batches, gathered rank by rank, is generation batch t.

``LabelGroups`` is what sentence-transformers' trainer reads with ``GroupByLabelBatchSampler``
(sharded by accelerate), on torch alone: each label's items shuffled by the epoch's generator
and read in pairs, the labels taking turns in an order drawn anew each round until fewer than
two have pairs left, the stream cut into batches (a short last one kept if it holds two pairs
and drop_last is off), dealt out as WholeBatches deals its batches.

``AspectRatioBatches`` is what mmdet's ``AspectRatioBatchSampler`` reads over mmengine's
``DefaultSampler`` (``round_up=True``: the rank's strided share padded from the head, always),
on torch alone: torch's ``DistributedSampler(drop_last=False)``, whose items go to two buckets
(0: width < height) and a bucket that holds B items is yielded; at the end the two buckets'
leftovers, bucket 0's first, are cut into batches of B, and with drop_last only a short last
one is dropped (mmdet drops one of exactly B items too).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import torch
import torch.distributed as dist
from torch.utils.data import BatchSampler, DistributedSampler, Sampler


class ContiguousBlocks(Sampler[int]):
    """rank r takes the r-th of W contiguous blocks of the epoch's order, padded from its head
    to ceil(N/W) items each (cut to N // W each with drop_last)."""

    def __init__(
        self,
        dataset: Any,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        self.num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
        self.rank = dist.get_rank() if rank is None else rank
        if self.num_replicas <= 0 or not 0 <= self.rank < self.num_replicas:
            raise ValueError(f"Invalid rank {self.rank}, rank should be in the interval [0, {self.num_replicas - 1}]")
        self.n, self.shuffle, self.seed, self.drop_last, self.epoch = len(dataset), shuffle, seed, drop_last, 0
        self.num_samples = self.n // self.num_replicas if drop_last else math.ceil(self.n / self.num_replicas)

    def __iter__(self) -> Iterator[int]:
        order = list(range(self.n))
        if self.shuffle:
            order = torch.randperm(self.n, generator=torch.Generator().manual_seed(self.seed + self.epoch)).tolist()
        total = self.num_samples * self.num_replicas
        if order:
            order = (order * math.ceil(total / len(order)))[:total]
        start = self.rank * self.num_samples
        return iter(order[start : start + self.num_samples])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch


class PerRankBatches(BatchSampler):
    def __init__(self, sampler: DistributedSampler[int] | ContiguousBlocks, batch_size: int, drop_last: bool) -> None:
        super().__init__(sampler, batch_size, drop_last)
        self.shares = sampler

    def set_epoch(self, epoch: int) -> None:
        self.shares.set_epoch(epoch)


def per_rank(
    dataset: Any,
    num_replicas: int | None = None,
    rank: int | None = None,
    shuffle: bool = True,
    seed: int = 0,
    drop_last: bool = False,
    batch_size: int = 1,
) -> PerRankBatches:
    shares: DistributedSampler[int] = DistributedSampler(
        dataset, num_replicas, rank, shuffle=shuffle, seed=seed, drop_last=drop_last
    )
    return PerRankBatches(shares, batch_size, drop_last)


def per_rank_blocks(
    dataset: Any,
    num_replicas: int | None = None,
    rank: int | None = None,
    shuffle: bool = True,
    seed: int = 0,
    drop_last: bool = False,
    batch_size: int = 1,
) -> PerRankBatches:
    return PerRankBatches(
        ContiguousBlocks(dataset, num_replicas, rank, shuffle, seed, drop_last), batch_size, drop_last
    )


class WholeBatches(Sampler[list[int]]):
    def __init__(
        self,
        dataset: Any,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
        batch_size: int = 1,
    ) -> None:
        self.num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
        self.rank = dist.get_rank() if rank is None else rank
        if not 0 <= self.rank < self.num_replicas:
            raise ValueError(f"Invalid rank {self.rank}, rank should be in the interval [0, {self.num_replicas - 1}]")
        self.size, self.shuffle, self.seed, self.drop_last, self.batch_size = (
            len(dataset),
            shuffle,
            seed,
            drop_last,
            batch_size,
        )
        self.epoch = 0
        self.made: tuple[int, list[list[int]]] | None = None

    def order(self) -> list[int]:
        """The epoch's order, the same on every rank."""
        if self.shuffle:
            return torch.randperm(self.size, generator=torch.Generator().manual_seed(self.seed + self.epoch)).tolist()
        return list(range(self.size))

    def batches(self) -> list[list[int]]:
        """Every rank's batches of the epoch, in order: one BatchSampler over one order."""
        return list(BatchSampler(self.order(), self.batch_size, self.drop_last))

    def epoch_batches(self) -> list[list[int]]:
        """:meth:`batches` of the epoch set, made once: ``len()`` asks for them too."""
        if self.made is None or self.made[0] != self.epoch:
            self.made = (self.epoch, self.batches())
        return self.made[1]

    def __iter__(self) -> Iterator[list[int]]:
        batches = self.epoch_batches()
        rounds = math.ceil(len(batches) / self.num_replicas)
        completed = (batches * math.ceil(rounds * self.num_replicas / max(len(batches), 1)))[
            : rounds * self.num_replicas
        ]
        return iter(completed[self.rank :: self.num_replicas])

    def __len__(self) -> int:
        return math.ceil(len(self.epoch_batches()) / self.num_replicas)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch


class RepeatedGroups(WholeBatches):
    def __init__(
        self,
        dataset: Any,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
        batch_size: int = 1,
        repeats: int = 1,
    ) -> None:
        super().__init__(dataset, num_replicas, rank, shuffle, seed, drop_last, batch_size)
        generation_batch = self.num_replicas * batch_size
        if repeats < 1 or generation_batch % repeats:
            raise ValueError(
                f"repeats={repeats} must divide the generation batch, num_replicas x batch_size = {generation_batch}"
            )
        self.repeats = repeats

    def generation(self, selected: list[int]) -> list[int]:
        """One generation batch of the indices it selects: G copies of each in a row."""
        return [index for index in selected for _ in range(self.repeats)]

    def generations(self) -> list[list[int]]:
        """The epoch's generation batches, W x B / G indices of the order each; an incomplete
        last one is dropped, so every round is whole."""
        order, selected = self.order(), self.num_replicas * self.batch_size // self.repeats
        whole = len(order) - len(order) % selected
        return [self.generation(order[start : start + selected]) for start in range(0, whole, selected)]

    def batches(self) -> list[list[int]]:
        """Each generation batch cut into W batches of B, rank r's the r-th."""
        size = self.batch_size
        return [items[start : start + size] for items in self.generations() for start in range(0, len(items), size)]


class LabelGroups(WholeBatches):
    def __init__(
        self,
        dataset: Any,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
        batch_size: int = 4,
        labels: Sequence[int] = (),
    ) -> None:
        super().__init__(dataset, num_replicas, rank, shuffle, seed, drop_last, batch_size)
        if batch_size < 4 or batch_size % 2:
            raise ValueError(f"batch_size must be an even number >= 4, got {batch_size}")
        if len(labels) != self.size:
            raise ValueError(f"labels= gives {len(labels)} labels for a dataset of {self.size} items")
        self.items_of: dict[int, list[int]] = {}
        for index, label in enumerate(labels):
            self.items_of.setdefault(label, []).append(index)
        if sum(len(items) >= 2 for items in self.items_of.values()) < 2:
            raise ValueError("label-grouped batches need at least two labels of at least two items each")

    def shuffled(self, items: list[int], generator: torch.Generator) -> list[int]:
        return [items[i] for i in torch.randperm(len(items), generator=generator).tolist()] if self.shuffle else items

    def pairs(self, generator: torch.Generator) -> dict[int, list[int]]:
        """Each label's items, in the epoch's order, cut to whole pairs."""
        return {label: self.shuffled(items, generator)[: len(items) // 2 * 2] for label, items in self.items_of.items()}

    def stream(self, generator: torch.Generator) -> list[int]:
        """The labels' pairs, the labels taking turns in an order drawn each round, until fewer
        than two labels have pairs left; two pairs in a row never share a label."""
        pairs = self.pairs(generator)
        rounds = sorted((len(items) // 2 for items in pairs.values()), reverse=True)
        last_round = rounds[1] if len(rounds) > 1 else 0  # then one label alone has pairs left
        stream: list[int] = []
        last = None
        for round_ in range(last_round):
            turn = self.shuffled(sorted(label for label, items in pairs.items() if len(items) > 2 * round_), generator)
            if turn[0] == last:
                turn[0], turn[1] = turn[1], turn[0]
            for label in turn:
                stream += pairs[label][2 * round_ : 2 * round_ + 2]
            last = turn[-1]
        return stream

    def batches(self) -> list[list[int]]:
        stream = self.stream(torch.Generator().manual_seed(self.seed + self.epoch))
        size = self.batch_size
        batches = [stream[start : start + size] for start in range(0, len(stream), size)]
        if batches and len(batches[-1]) < size and (self.drop_last or len(batches[-1]) < 4):
            batches.pop()
        return batches


class AspectRatioBatches(Sampler[list[int]]):
    def __init__(
        self,
        dataset: Any,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
        batch_size: int = 1,
        aspects: Sequence[int] = (),
    ) -> None:
        self.shares: DistributedSampler[int] = DistributedSampler(
            dataset, num_replicas, rank, shuffle=shuffle, seed=seed, drop_last=False
        )
        if len(aspects) != len(dataset):
            raise ValueError(f"aspects= gives {len(aspects)} buckets for a dataset of {len(dataset)} items")
        self.aspects, self.batch_size, self.drop_last = list(aspects), batch_size, drop_last

    def __iter__(self) -> Iterator[list[int]]:
        buckets: list[list[int]] = [[], []]
        for position, index in enumerate(self.shares):
            bucket = buckets[self.bucket(index, position)]
            bucket.append(index)
            if len(bucket) == self.batch_size:
                yield bucket[:]
                bucket.clear()
        left = buckets[0] + buckets[1]
        for start in range(0, len(left), self.batch_size):
            batch = left[start : start + self.batch_size]
            if len(batch) == self.batch_size or not self.drop_last:
                yield batch

    def bucket(self, index: int, position: int) -> int:
        """The aspect bucket of ``index``, the ``position``-th item of the rank's share."""
        return self.aspects[index]

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.shares) // self.batch_size
        return math.ceil(len(self.shares) / self.batch_size)

    def set_epoch(self, epoch: int) -> None:
        self.shares.set_epoch(epoch)
