# StatefulDistributedSampler, ported below, carries Meta's notice, from fairchem-core's LICENSE.md (MIT):
#
# Copyright (c) Meta Platforms, Inc. and affiliates.
#
# Permission is hereby granted, free of charge, to any person obtaining a copy of this software and
# associated documentation files (the "Software"), to deal in the Software without restriction,
# including without limitation the rights to use, copy, modify, merge, publish, distribute,
# sublicense, and/or sell copies of the Software, and to permit persons to whom the Software is
# furnished to do so, subject to the following conditions:
#
# The above copyright notice and this permission notice shall be included in all copies or
# substantial portions of the Software.
#
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT
# NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND
# NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES
# OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN
# CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.

"""fairchem's StatefulDistributedSampler, ported for testing, resumed through its start iteration.

Ported from fairchem-core 2.24.0, ``fairchem/core/common/data_parallel.py`` (MIT, notice
above), verbatim but for its log line. The module imports numba and fairchem's datasets
(for its BalancedBatchSampler), and the wheel pins its own torch, so the suite certifies
this port.

It is torch's DistributedSampler whose pass skips ``start_iter * batch_size`` indices of
the rank's share; fairchem's training unit resumes it with
``set_epoch_and_start_iteration(epoch, start_iter)``, the steps taken of the epoch, which
its checkpoint keeps: there is no ``state_dict``. The factory declares that entry point
(``adapters/resumed_by_count.py``), with ``batch_size`` 1, so that a step is one index and
a resume can fall between any two. Its ``__len__`` is DistributedSampler's: after a
start, it still counts the whole epoch.
"""

from __future__ import annotations

from typing import Any

from torch.utils.data import DistributedSampler

from sampler_conformance.adapters import fill_from_process_group
from sampler_conformance.adapters.resumed_by_count import ResumedByCount

BATCH_SIZE = 1  # indices per step: a resume can fall between any two


class StatefulDistributedSampler(DistributedSampler):
    """
    More fine-grained state DataSampler that uses training iteration and epoch
    both for shuffling data. PyTorch DistributedSampler only uses epoch
    for the shuffling and starts sampling data from the start. In case of training
    on very large data, we train for one epoch only and when we resume training,
    we want to resume the data sampler from the training iteration.
    """

    def __init__(self, dataset, batch_size, **kwargs):
        super().__init__(dataset=dataset, **kwargs)

        self.start_iter = 0
        self.batch_size = batch_size
        assert self.batch_size > 0, "batch_size not set for the sampler"
        # port: logging.info(f"rank: {self.rank}: Sampler created...") left out

    def __iter__(self):
        distributed_sampler_sequence = super().__iter__()
        if self.start_iter > 0:
            for i, _ in enumerate(distributed_sampler_sequence):
                if i == self.start_iter * self.batch_size - 1:
                    break
        return distributed_sampler_sequence

    def set_epoch_and_start_iteration(self, epoch, start_iter):
        self.set_epoch(epoch)
        self.start_iter = start_iter


def resume_from_count(sampler: StatefulDistributedSampler, epoch: int, consumed: int) -> None:
    """fairchem's entry point: the steps this rank took of the epoch, from the job's count."""
    sampler.set_epoch_and_start_iteration(epoch, consumed // (sampler.num_replicas * sampler.batch_size))


def stateful_distributed_sampler(
    dataset: Any,
    num_replicas: int | None = None,
    rank: int | None = None,
    shuffle: bool = True,
    seed: int = 0,
    drop_last: bool = False,
) -> ResumedByCount:
    sampler = StatefulDistributedSampler(
        dataset, BATCH_SIZE, num_replicas=num_replicas, rank=rank, shuffle=shuffle, seed=seed, drop_last=drop_last
    )
    world_size, _ = fill_from_process_group(num_replicas, rank)
    return ResumedByCount(sampler, resume_from_count, world_size)
