# The three classes ported below (MegatronPretrainingSampler, RandomSeedDataset,
# MegatronPretrainingRandomSampler) carry NVIDIA's notice, from Megatron-LM's LICENSE (BSD 3-Clause):
#
# Copyright (c) 2022, NVIDIA CORPORATION. All rights reserved.
#
# Redistribution and use in source and binary forms, with or without modification, are permitted
# provided that the following conditions are met:
#  * Redistributions of source code must retain the above copyright notice, this list of
#    conditions and the following disclaimer.
#  * Redistributions in binary form must reproduce the above copyright notice, this list of
#    conditions and the following disclaimer in the documentation and/or other materials provided
#    with the distribution.
#  * Neither the name of NVIDIA CORPORATION nor the names of its contributors may be used to
#    endorse or promote products derived from this software without specific prior written
#    permission.
#
# THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS ``AS IS'' AND ANY EXPRESS OR IMPLIED
# WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS
# FOR A PARTICULAR PURPOSE ARE DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT OWNER OR CONTRIBUTORS BE
# LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR CONSEQUENTIAL DAMAGES
# (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR SERVICES; LOSS OF USE, DATA, OR
# PROFITS; OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN
# CONTRACT, STRICT LIABILITY, OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF
# THE USE OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.

"""Megatron-LM's two pretraining samplers, ported for testing, resumable through ``consumed_samples``.

Ported from NVIDIA/Megatron-LM, ``megatron/training/datasets/data_samplers.py`` at commit
cd55b7a2876814b3d278416f9de5fc17e78b8bba (BSD 3-Clause, notice above). Megatron-LM is not on
PyPI and the megatron-core wheel does not ship this module, so the suite certifies this port.
It is a port for testing, not a fork to use: the logic is the shipped one line for line,
including what the suite reports against it. Each change is marked ``# port:``.

Both are batch samplers: each ``__iter__`` yields this rank's micro-batches (lists of indices),
and ``__len__`` returns ``total_samples``.

- :class:`MegatronPretrainingSampler` (``--dataloader-type single``, the default): the global
  order is ``range(consumed_samples, total_samples)``, cut into global batches of
  ``micro_batch_size * data_parallel_size``; rank r gets micro-batch r of each (items
  ``[r * mbs, (r + 1) * mbs)`` of the global batch). No shuffle, no seed, no epochs. With
  ``drop_last`` (its default, and what Megatron uses) the last incomplete global batch is
  dropped; without it each rank gets its slice of that batch, which may be short or empty.
  It never changes ``consumed_samples``: every pass starts where it was built to start.
- :class:`MegatronPretrainingRandomSampler` (``--dataloader-type cyclic``): the epoch is
  ``consumed_samples // active_total_samples`` (``total_samples`` cut to whole global batches)
  and seeds ``torch.randperm`` alone (``--seed`` is not used). With ``data_sharding`` (the
  default; ``--no-data-sharding`` turns it off) rank r shuffles its own contiguous bucket of
  ``(N // gbs) * mbs`` indices; without, it takes every W-th item of one shuffled
  ``range(N // mbs * mbs)``. An incomplete last micro-batch is dropped. It adds a global batch to
  its own ``consumed_samples`` before it yields each micro-batch, so iterating it again goes on
  with the rest of the epoch, or the next one (Megatron wraps its loader in ``cyclic_iter``).

How Megatron resumes them: they have no ``state_dict``. After every step the training loop
(``megatron/training/training.py``) does ``args.consumed_train_samples +=
data_parallel_size * micro_batch_size * num_microbatches``; the checkpoint saves ``args``;
loading restores ``consumed_train_samples``, and ``build_pretraining_data_loader(dataset,
args.consumed_train_samples)`` builds the sampler anew with it.

The factories at the end call them the way the suite calls a sampler and add torch's Stateful
protocol in exactly that way (:class:`ConsumedSamplesState`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from sampler_conformance.adapters import fill_from_process_group
from sampler_conformance.subjects.common.index_dataset import IndexDataset


class MegatronPretrainingSampler:
    """
    Sampler for Megatron pretraining dataloaders that divides data samples across
    data parallel workers. Each worker receives a contiguous chunk of data determined by
    its rank and the micro batch size. Supports dropping the last incomplete batch if
    specified, and keeps track of total and consumed samples. Designed to work with
    distributed training using Megatron's data parallelism.
    """

    def __init__(
        self,
        total_samples,
        consumed_samples,
        micro_batch_size,
        data_parallel_rank,
        data_parallel_size,
        drop_last=True,
    ):
        # Keep a copy of input params for later use.
        self.total_samples = total_samples
        self.consumed_samples = consumed_samples
        self.micro_batch_size = micro_batch_size
        self.data_parallel_rank = data_parallel_rank
        self.micro_batch_times_data_parallel_size = self.micro_batch_size * data_parallel_size
        self.drop_last = drop_last

        # Sanity checks.
        # port: the messages are requoted and their split literal joined by ruff; same text.
        assert self.total_samples > 0, "no sample to consume: {}".format(self.total_samples)  # noqa: UP032
        assert self.consumed_samples < self.total_samples, "no samples left to consume: {}, {}".format(  # noqa: UP032
            self.consumed_samples, self.total_samples
        )
        assert self.micro_batch_size > 0
        assert data_parallel_size > 0
        assert self.data_parallel_rank < data_parallel_size, (
            "data_parallel_rank should be smaller than data size: {}, {}".format(  # noqa: UP032
                self.data_parallel_rank, data_parallel_size
            )
        )

    def __len__(self):
        return self.total_samples

    def get_start_end_idx(self):
        """
        Calculate the start and end indices for the current data parallel worker's
        chunk within a batch.

        Returns:
            tuple: (start_idx, end_idx) indicating the slice of the batch for this worker.
        """
        start_idx = self.data_parallel_rank * self.micro_batch_size
        end_idx = start_idx + self.micro_batch_size
        return start_idx, end_idx

    def __iter__(self):
        batch = []
        # Last batch will be dropped if drop_last is not set False
        for idx in range(self.consumed_samples, self.total_samples):
            batch.append(idx)
            if len(batch) == self.micro_batch_times_data_parallel_size:
                start_idx, end_idx = self.get_start_end_idx()
                yield batch[start_idx:end_idx]
                batch = []

        # Check the last partial batch and see drop_last is set
        if len(batch) > 0 and not self.drop_last:
            start_idx, end_idx = self.get_start_end_idx()
            yield batch[start_idx:end_idx]


class RandomSeedDataset(Dataset):
    """
    A dataset wrapper that resets the random seed before each sample.

    This ensures deterministic behavior per sample by setting the RNG state
    for torch, numpy, and random before accessing each underlying data sample.
    The base seed is retrieved from training arguments, and can be varied per epoch
    using the set_epoch method to ensure different shuffling or augmentation each epoch.

    Args:
        dataset: The underlying dataset to wrap.

    Methods:
        set_epoch(epoch): Change the seed offset so each epoch produces different randomization.
        __getitem__(idx): Sets the seed based on the sample index and current epoch.
    """

    # port: kept only for MegatronPretrainingRandomSampler's isinstance test; the suite's
    # datasets are never one.

    def __init__(self, dataset, seed):
        self.base_seed = seed
        self.curr_seed = seed
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def set_epoch(self, epoch):
        """
        Change the seed offset so each epoch produces different randomization.

        Args:
            epoch: The epoch number to use as the seed offset.
        """
        self.curr_seed = self.base_seed + epoch

    def __getitem__(self, idx):
        seed = idx + self.curr_seed
        torch.manual_seed(seed)
        random.seed(seed)
        np.random.seed(seed)
        return self.dataset[idx]


class MegatronPretrainingRandomSampler:
    """
    Sampler for Megatron pretraining dataloaders that performs random sampling
    across data parallel workers. Supports data sharding to divide the dataset
    into buckets and shuffle within each bucket. Designed to work with distributed
    training using Megatron's data parallelism.
    """

    def __init__(
        self,
        dataset,
        total_samples,
        consumed_samples,
        micro_batch_size,
        data_parallel_rank,
        data_parallel_size,
        data_sharding,
    ):
        # Keep a copy of input params for later use.
        self.dataset = dataset
        self.total_samples = total_samples
        self.consumed_samples = consumed_samples
        self.micro_batch_size = micro_batch_size
        self.data_parallel_rank = data_parallel_rank
        self.data_parallel_size = data_parallel_size
        self.data_sharding = data_sharding
        self.micro_batch_times_data_parallel_size = self.micro_batch_size * data_parallel_size
        self.last_batch_size = self.total_samples % self.micro_batch_times_data_parallel_size

        # Sanity checks.
        # port: the messages are requoted and their split literal joined by ruff; same text.
        assert self.total_samples > 0, "no sample to consume: {}".format(self.total_samples)  # noqa: UP032
        assert self.micro_batch_size > 0
        assert data_parallel_size > 0
        assert self.data_parallel_rank < data_parallel_size, (
            "data_parallel_rank should be smaller than data size: {}, {}".format(  # noqa: UP032
                self.data_parallel_rank, data_parallel_size
            )
        )

    def __len__(self):
        return self.total_samples

    def __iter__(self):
        active_total_samples = self.total_samples - self.last_batch_size
        self.epoch = self.consumed_samples // active_total_samples
        current_epoch_samples = self.consumed_samples % active_total_samples
        assert current_epoch_samples % self.micro_batch_times_data_parallel_size == 0

        if isinstance(self.dataset, RandomSeedDataset):
            self.dataset.set_epoch(self.epoch)

        # data sharding and random sampling
        if self.data_sharding:
            bucket_size = (self.total_samples // self.micro_batch_times_data_parallel_size) * self.micro_batch_size
            bucket_offset = current_epoch_samples // self.data_parallel_size
            start_idx = self.data_parallel_rank * bucket_size

            g = torch.Generator()
            g.manual_seed(self.epoch)
            random_idx = torch.randperm(bucket_size, generator=g).tolist()
            idx_range = [start_idx + x for x in random_idx[bucket_offset:]]
        else:
            full_bucket_size = (self.total_samples // self.micro_batch_size) * self.micro_batch_size
            full_bucket_offset = current_epoch_samples
            g = torch.Generator()
            g.manual_seed(self.epoch)
            idx_range_total = torch.randperm(full_bucket_size, generator=g).tolist()
            idx_range_active = idx_range_total[full_bucket_offset:]
            idx_range = idx_range_active[self.data_parallel_rank :: self.data_parallel_size]

        batch = []
        # Last batch if not complete will be dropped.
        for idx in idx_range:
            batch.append(idx)
            if len(batch) == self.micro_batch_size:
                self.consumed_samples += self.micro_batch_times_data_parallel_size
                yield batch
                batch = []


# The adaptation to the suite: none of this is Megatron's code.


class ConsumedSamplesState:
    """A Megatron sampler with torch's Stateful protocol, resumed as Megatron's training loop
    resumes it: rebuilt with the ``consumed_samples`` its checkpoint recorded.

    A step is counted the way the loop counts it with gradient accumulation 1: each micro-batch
    this rank yields is one global step of ``micro_batch_size * data_parallel_size`` samples
    (every rank yields its micro-batch of the same global batch), counted when it is yielded,
    whether the batch is full or not. ``state_dict()`` returns ``{"consumed_samples": c}`` with
    c = the ``consumed_samples`` the sampler was built with + global batch size * steps taken
    since; ``load_state_dict`` rebuilds the sampler with that c. Iteration, ``len()`` and every
    refusal are the wrapped sampler's own. The count is of micro-batches yielded, so under a
    DataLoader that prefetches it runs ahead of the steps trained, as the random sampler's own
    ``consumed_samples`` does; Megatron checkpoints the loop's count for that reason.
    """

    def __init__(self, build: Callable[..., Any], global_batch_size: int, consumed_samples: int = 0) -> None:
        self.build = build  # build(consumed_samples=c): the sampler Megatron builds from a checkpoint
        self.global_batch_size = global_batch_size
        self.consumed_samples = consumed_samples
        self.sampler = build(consumed_samples=consumed_samples)

    def __iter__(self) -> Iterator[list[int]]:
        for micro_batch in self.sampler:
            self.consumed_samples += self.global_batch_size
            yield micro_batch

    def __len__(self) -> int:
        return len(self.sampler)

    def state_dict(self) -> dict[str, int]:
        return {"consumed_samples": self.consumed_samples}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.consumed_samples = state["consumed_samples"]
        self.sampler = self.build(consumed_samples=self.consumed_samples)


def pretraining_sampler(
    dataset: Any,
    num_replicas: int | None = None,
    rank: int | None = None,
    drop_last: bool = False,
    batch_size: int = 1,
) -> ConsumedSamplesState:
    """MegatronPretrainingSampler, as ``build_pretraining_data_loader`` builds it for
    ``--dataloader-type single``. It has no shuffle and no seed, so neither is declared.
    ``drop_last`` defaults to False here, the suite's convention; Megatron passes none, so
    its training runs with the constructor's default, True."""
    # port: build_pretraining_data_loader reads these from args and mpu; the suite passes them.
    data_parallel_size, data_parallel_rank = fill_from_process_group(num_replicas, rank)
    build = partial(
        MegatronPretrainingSampler,
        total_samples=len(dataset),
        micro_batch_size=batch_size,
        data_parallel_rank=data_parallel_rank,
        data_parallel_size=data_parallel_size,
        drop_last=drop_last,
    )
    return ConsumedSamplesState(build, batch_size * data_parallel_size)


def pretraining_random_sampler(
    dataset: Any,
    num_replicas: int | None = None,
    rank: int | None = None,
    batch_size: int = 1,
) -> ConsumedSamplesState:
    """MegatronPretrainingRandomSampler, as ``build_pretraining_data_loader`` builds it for
    ``--dataloader-type cyclic``, with ``data_sharding`` at Megatron's default (True). It
    always shuffles, seeds with the epoch alone and always drops an incomplete micro-batch,
    so it declares no shuffle, seed or drop_last."""
    # port: build_pretraining_data_loader reads these from args and mpu; the suite passes them.
    data_parallel_size, data_parallel_rank = fill_from_process_group(num_replicas, rank)
    build = partial(
        MegatronPretrainingRandomSampler,
        dataset,
        total_samples=len(dataset),
        micro_batch_size=batch_size,
        data_parallel_rank=data_parallel_rank,
        data_parallel_size=data_parallel_size,
        data_sharding=True,
    )
    return ConsumedSamplesState(build, batch_size * data_parallel_size)


def _pretraining_data_loader(dataset: Any, batch_sampler: Any, num_workers: int) -> torch.utils.data.DataLoader:
    """The DataLoader ``build_pretraining_data_loader`` returns (data_samplers.py:86-94 at cd55b7a; no
    exit signal handler, so no ``worker_init_fn``)."""
    return torch.utils.data.DataLoader(
        dataset,
        batch_sampler=batch_sampler,
        num_workers=num_workers,
        pin_memory=True,
        persistent_workers=True if num_workers > 0 else False,
    )


def pretraining_loader(
    dataset_size: int, *, dp_rank: int, dp_world_size: int, global_batch_size: int, num_workers: int = 0
) -> torch.utils.data.DataLoader:
    """``build_pretraining_data_loader(dataset, consumed_samples=0)`` for ``--dataloader-type single``
    (Megatron's default), over a dataset whose item i is i: one micro-batch of ``global_batch_size //
    dp_world_size`` a rank per global batch (one micro-batch a step, no gradient accumulation)."""
    # port: build_pretraining_data_loader reads these from args and mpu; the suite passes them.
    dataset = IndexDataset(dataset_size)
    batch_sampler = MegatronPretrainingSampler(
        total_samples=len(dataset),
        consumed_samples=0,
        micro_batch_size=global_batch_size // dp_world_size,
        data_parallel_rank=dp_rank,
        data_parallel_size=dp_world_size,
    )
    return _pretraining_data_loader(dataset, batch_sampler, num_workers)


def pretraining_random_loader(
    dataset_size: int, *, dp_rank: int, dp_world_size: int, global_batch_size: int, num_workers: int = 0
) -> torch.utils.data.DataLoader:
    """The same for ``--dataloader-type cyclic``, ``data_sharding`` at its default (True)."""
    # port: build_pretraining_data_loader reads these from args and mpu; the suite passes them.
    dataset = IndexDataset(dataset_size)
    batch_sampler = MegatronPretrainingRandomSampler(
        dataset,
        total_samples=len(dataset),
        consumed_samples=0,
        micro_batch_size=global_batch_size // dp_world_size,
        data_parallel_rank=dp_rank,
        data_parallel_size=dp_world_size,
        data_sharding=True,
    )
    return _pretraining_data_loader(dataset, batch_sampler, num_workers)
