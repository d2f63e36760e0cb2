"""The batch contracts' references, built on torch alone.

    sampler_conformance.adapters.budget_batches:make            contract dynamic_batches  (the reference)
    sampler_conformance.adapters.budget_batches:micro_batches   contract micro_batches    (the reference)
    sampler_conformance.adapters.budget_batches:poisson         contract poisson          (the reference)

``make`` plans one global list of batches per epoch, the same in every process: the items in
a random order from a generator seeded with ``seed + epoch``, sorted by length within windows
of 64 (bucketing: batches of alike lengths waste less padding), packed greedily into batches
costing at most ``max_tokens`` (the sum of their lengths; an item longer than the budget goes
alone), and the batches shuffled by the same generator. The last, incomplete round of batches
(fewer than W) is dropped, so every rank yields the same number; rank ``r`` takes batches
``r, r + W, ...``.

``micro_batches`` takes the items in a random order seeded with ``seed + epoch``, in global
steps of ``batch_size`` (the last incomplete one dropped); it sorts each step's items by
length and cuts them into W contiguous micro-batches, as near equal in count as they go:
rank ``r`` takes the r-th.

``poisson`` deals each rank a disjoint shard (a random order seeded with ``seed + epoch``,
rank ``r`` taking items ``r, r + W, ...``) and runs ``int(1 / sample_rate)`` steps per epoch
(opacus' default); at each step it draws each item of its shard with probability
``sample_rate``, from a generator of its own seeded with the seed, the epoch and the rank, and
yields the batch even when it is empty.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch
from torch.utils.data import Sampler

BUCKET_WINDOW = 64


class TokenBudgetBatchSampler(Sampler[list[int]]):
    def __init__(self, lengths: Sequence[int], num_replicas: int, rank: int, max_tokens: int, seed: int = 0) -> None:
        self.lengths = list(lengths)
        self.num_replicas = num_replicas
        self.rank = rank
        self.max_tokens = max_tokens
        self.seed = seed
        self.epoch = 0

    def plan(self) -> list[list[int]]:
        """This epoch's batches of all ranks together, after the incomplete last round is dropped."""
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        order = torch.randperm(len(self.lengths), generator=generator).tolist()
        windows = [order[i : i + BUCKET_WINDOW] for i in range(0, len(order), BUCKET_WINDOW)]
        bucketed = [i for window in windows for i in sorted(window, key=self.lengths.__getitem__)]
        batches: list[list[int]] = []
        batch: list[int] = []
        cost = 0
        for index in bucketed:
            length = self.lengths[index]
            if batch and self.add(cost, length) > self.max_tokens:
                batches.append(batch)
                batch, cost = [], 0
            batch.append(index)
            cost = self.add(cost, length)
        if batch:
            batches.append(batch)
        shuffled = [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]
        return shuffled[: len(shuffled) - len(shuffled) % self.num_replicas]

    def add(self, cost: int, length: int) -> int:
        """A batch's cost with one more item: Python ints, exact past any budget."""
        return cost + length

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self.plan()[self.rank :: self.num_replicas])

    def __len__(self) -> int:
        return len(self.plan()) // self.num_replicas

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch


make = TokenBudgetBatchSampler


class MicroBatchSampler(Sampler[list[int]]):
    def __init__(self, lengths: Sequence[int], num_replicas: int, rank: int, batch_size: int, seed: int = 0) -> None:
        if batch_size < num_replicas:
            raise ValueError(f"batch_size={batch_size} leaves some of the {num_replicas} ranks without an item")
        self.lengths = list(lengths)
        self.num_replicas = num_replicas
        self.rank = rank
        self.batch_size = batch_size
        self.seed = seed
        self.epoch = 0

    def steps(self) -> list[list[int]]:
        """This epoch's global steps, every rank's items together."""
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        order = torch.randperm(len(self.lengths), generator=generator).tolist()
        whole = len(order) - len(order) % self.batch_size
        return [order[start : start + self.batch_size] for start in range(0, whole, self.batch_size)]

    def __iter__(self) -> Iterator[list[int]]:
        for step in self.steps():
            by_length = torch.tensor(sorted(step, key=self.lengths.__getitem__))
            yield torch.tensor_split(by_length, self.num_replicas)[self.rank].tolist()

    def __len__(self) -> int:
        return len(self.lengths) // self.batch_size

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch


micro_batches = MicroBatchSampler


class PoissonBatchSampler(Sampler[list[int]]):
    def __init__(self, lengths: Sequence[int], num_replicas: int, rank: int, sample_rate: float, seed: int = 0) -> None:
        self.dataset_size = len(lengths)
        self.num_replicas = num_replicas
        self.rank = rank
        self.sample_rate = sample_rate
        self.steps = int(1 / sample_rate)
        self.seed = seed
        self.epoch = 0

    def shard(self) -> torch.Tensor:
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        return torch.randperm(self.dataset_size, generator=generator)[self.rank :: self.num_replicas]

    def __iter__(self) -> Iterator[list[int]]:
        shard = self.shard()
        generator = torch.Generator().manual_seed((self.seed + self.epoch) * self.num_replicas + self.rank)
        for _ in range(self.steps):
            drawn = torch.rand(shard.numel(), generator=generator) < self.sample_rate
            yield shard[drawn].tolist()

    def __len__(self) -> int:
        return self.steps

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch


poisson = PoissonBatchSampler
