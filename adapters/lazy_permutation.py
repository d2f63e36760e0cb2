"""The reference of ``+scalable``: torch's DistributedSampler's promises, at a cost that follows
the rank's share, not N.

torch's ``DistributedSampler`` draws ``torch.randperm(N)`` and turns it into a Python list on
every rank, at every epoch: 4.6 GB and 12 s per rank before the first index at N = 1e8
(pytorch/pytorch #45427, #103339). ``LazyDistributedSampler`` keeps every promise of the
``torch`` contract (the same length, the padding from the head of the global order, the
strided shares, a new order with ``set_epoch`` and with the seed) and never holds the
permutation: the global order is a keyed bijection of ``range(N)`` (a Feistel network on the
next even power of two, walked back into range), and rank r computes positions r, r + W, ...
of it as it goes, a chunk at a time. Its memory is O(1) (a chunk), its time to the first
index O(1); ``--contract=torch+scalable`` certifies it.

It is not torch's order: the same (seed, epoch) gives another permutation than torch's
generator does, so it does not replace a DistributedSampler in a job that must repeat one.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch.distributed as dist
from torch.utils.data import Sampler

ROUNDS = 4  # of the Feistel network: four make a keyed pseudo-random permutation
CHUNK = 4_096  # positions computed at once

_MASK64 = (1 << 64) - 1


def _mix(values: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser over uint64 values (wrapping arithmetic)."""
    z = values + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


class KeyedPermutation:
    """A bijection of ``range(size)`` keyed by ``key``, evaluated at any positions without
    holding it: a balanced Feistel network on 2b bits (4^b >= size, so fewer than 4 in 4
    values fall outside), and a value outside re-enciphered until it falls inside (cycle
    walking, which keeps it a bijection of range(size))."""

    def __init__(self, size: int, key: int) -> None:
        self.size = size
        self.half = max(1, math.ceil(math.log2(max(size, 2)) / 2))
        self.mask = np.uint64((1 << self.half) - 1)
        keys = _mix(np.arange(ROUNDS, dtype=np.uint64) + np.uint64(_mix(np.array([key & _MASK64], np.uint64))[0]))
        self.keys = [np.uint64(k) for k in keys]

    def _encipher(self, values: np.ndarray) -> np.ndarray:
        left, right = values >> np.uint64(self.half), values & self.mask
        for key in self.keys:
            left, right = right, left ^ (_mix(right ^ key) & self.mask)
        return (left << np.uint64(self.half)) | right

    def __call__(self, positions: np.ndarray) -> np.ndarray:
        values = self._encipher(positions.astype(np.uint64))
        outside = values >= np.uint64(self.size)
        while outside.any():
            values[outside] = self._encipher(values[outside])
            outside = values >= np.uint64(self.size)
        return values.astype(np.int64)


class LazyDistributedSampler(Sampler[int]):
    """DistributedSampler's arguments and promises; the global order computed, never held."""

    def __init__(
        self,
        dataset: Any,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        if num_replicas is None:
            num_replicas = dist.get_world_size()
        if rank is None:
            rank = dist.get_rank()
        if num_replicas <= 0 or rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.size = len(dataset)
        self.num_replicas, self.rank = num_replicas, rank
        self.shuffle, self.seed, self.drop_last = shuffle, seed, drop_last
        self.epoch = 0
        if drop_last and self.size % num_replicas:
            self.num_samples = self.size // num_replicas  # the tail dropped, as torch's
        else:
            self.num_samples = -(-self.size // num_replicas)
        self.total_size = self.num_samples * num_replicas

    def positions(self) -> Iterator[np.ndarray]:
        """This rank's positions in the padded global order, a chunk at a time: r, r + W, ...,
        each taken modulo N (the padding repeats the order's head, as torch's does)."""
        for start in range(0, self.num_samples, CHUNK):
            steps = np.arange(start, min(start + CHUNK, self.num_samples), dtype=np.uint64)
            yield (np.uint64(self.rank) + steps * np.uint64(self.num_replicas)) % np.uint64(max(self.size, 1))

    def order(self) -> KeyedPermutation | None:
        """The epoch's global order (None: unshuffled, the identity)."""
        return KeyedPermutation(self.size, self.seed + self.epoch) if self.shuffle else None

    def __iter__(self) -> Iterator[int]:
        order = self.order()
        for chunk in self.positions():
            yield from (order(chunk) if order is not None else chunk.astype(np.int64)).tolist()

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch
