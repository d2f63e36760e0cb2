"""Things that are not samplers the suite can certify: targets of bad ``--sampler`` specs,
and samplers and a stream that raise, to prove faults are reported per rank and reproduced."""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Iterator
from typing import Any

from sampler_conformance.adapters.torch_iterable import RankWorkerSplit

from .parts import PartsSampler

NOT_A_SAMPLER = 42  # --sampler=...:NOT_A_SAMPLER names something that cannot be called

SHARD_ERROR = "shard index file for this rank is missing"
IMPORT_ERROR = "this module needs a configuration file that is not there"  # raised by broken_import


class RankFromEnvironment(PartsSampler):
    """Takes its rank from RANK/WORLD_SIZE (detectron2/mmengine style), not from keyword
    arguments: the plug must refuse it with a hint to wrap it in a factory."""

    def __init__(self, dataset: Any, shuffle: bool = True, seed: int = 0) -> None:
        super().__init__(dataset, int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("RANK", 0)), shuffle, seed)


def requires_its_rank(dataset: Any, num_replicas: int, rank: int, shuffle: bool = True, seed: int = 0) -> PartsSampler:
    """A factory whose num_replicas and rank have no default: it cannot be built from the
    process group, as every rank of a real group builds it (a usage error, not a crash)."""
    return PartsSampler(dataset, num_replicas, rank, shuffle, seed)


class RaisesOnRankOne(PartsSampler):
    """Rank 1's __iter__ raises, as a sampler reading a per-rank shard file would."""

    FAILING_RANK = 1

    def __iter__(self) -> Iterator[int]:
        if self.rank == self.FAILING_RANK:
            raise FileNotFoundError(SHARD_ERROR)
        return super().__iter__()


class RaisesTwoWays(PartsSampler):
    """Raises ValueError on an empty dataset and TypeError on every other, as pytorch-nlp
    0.5.0's ``DistributedBatchSampler`` around its ``BucketBatchSampler`` does beside torch 2.x:
    two kinds of failure of one invariant, each to be shown."""

    def __iter__(self) -> Iterator[int]:
        if len(self.dataset) == 0:
            raise ValueError(EMPTY_ERROR)
        raise TypeError(COMPARE_ERROR)


EMPTY_ERROR = "num_samples should be a positive integer value, but got num_samples=0"
COMPARE_ERROR = "'<' not supported between instances of 'int' and 'NoneType'"


class RaisesKeyboardInterrupt(PartsSampler):
    """Raises KeyboardInterrupt from its own code (as a sampler that catches a signal and
    re-raises it might) when the dataset has 7 items: a fault of the sampler's, not a Ctrl-C
    of the user's, so the run must go on to its verdict."""

    def __iter__(self) -> Iterator[int]:
        if len(self.dataset) == 7:
            raise KeyboardInterrupt
        return super().__iter__()


class LateEpochCoverageBug(PartsSampler):
    """From epoch 2**16 on, the last item of the order is replaced by the first: an item is
    lost and another repeated. Only tests that call set_epoch with a large epoch reach it
    (the seed test's large-seed check, the reshuffle test's drawn epochs); the structural
    tests never call set_epoch. The violation must be charged to coverage (and disjointness),
    not to the seed or reshuffle invariants whose tests found it."""

    LATE_EPOCH = 2**16

    def order(self) -> list[int]:
        order = super().order()
        if self.epoch >= self.LATE_EPOCH and len(order) > 1:
            order[-1] = order[0]
        return order


class SlowPass(PartsSampler):
    """Correct, but each pass takes SECONDS_PER_PASS: at W=21 one observation of all ranks
    takes far longer than one rank's --rank-timeout, which bounds one rank's pass only."""

    SECONDS_PER_PASS = 0.15

    def __iter__(self) -> Iterator[int]:
        time.sleep(self.SECONDS_PER_PASS)
        return super().__iter__()


class KillsItsProcess(PartsSampler):
    """Ends its process with os._exit(EXIT_STATUS) when the dataset has DEADLY_SIZE items, as
    a sampler whose worker library calls exit() on a bad shard does. In-process the run must
    survive it, charge it to edge_sizes with the case and the exit status, and go on."""

    DEADLY_SIZE = 7
    EXIT_STATUS = 3

    def __iter__(self) -> Iterator[int]:
        if len(self.dataset) == self.DEADLY_SIZE:
            os._exit(self.EXIT_STATUS)
        return super().__iter__()


class Segfaults(PartsSampler):
    """Reads address 0 (a segfault, as a buggy C extension causes) when the dataset has
    DEADLY_SIZE items: the test fails with the signal and the sampler's last frames."""

    DEADLY_SIZE = 7

    def __iter__(self) -> Iterator[int]:
        if len(self.dataset) == self.DEADLY_SIZE:
            ctypes.string_at(0)
        return super().__iter__()


class AllocatesWithoutBound(PartsSampler):
    """Grows a buffer without end when the dataset has DEADLY_SIZE items, as a padding loop
    whose bound reads the wrong attribute does (DistributedSampler with ``self.total_size``
    read as ``self.epoch``): the suite's memory budget stops it with MemoryError, charged to
    edge_sizes, before the machine runs out."""

    DEADLY_SIZE = 7
    CHUNK = 32 << 20  # bytes a step

    def __iter__(self) -> Iterator[int]:
        if len(self.dataset) == self.DEADLY_SIZE:
            grown = []
            while True:
                grown.append(bytearray(self.CHUNK))
        return super().__iter__()


class RaisesOnResume(RankWorkerSplit):
    """The reference stream, except that ``load_state_dict`` raises IndexError, as datasets
    5.2's ``split_dataset_by_node`` does in the worker that loads a state whose list of shard
    states is shorter than the fresh one's (docs/real-samplers.md): read without a resume it
    holds, so only the ``+resumable`` tests see the fault."""

    def load_state_dict(self, state: dict[str, int]) -> None:
        raise IndexError("list index out of range")
