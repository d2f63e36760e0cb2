# StatefulDistributedSampler, BalancedBatchSampler and MaxAtomDistributedBatchSampler, ported below,
# carry Meta's notice, from fairchem-core's LICENSE.md (MIT):
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
#
# _numba_argsort, below, is numba 0.68.1's quicksort (numba/misc/quicksort.py), which carries
# Anaconda's notice, from numba's LICENSE (BSD 2-clause):
#
# Copyright (c) 2012, Anaconda, Inc.
# All rights reserved.
#
# Redistribution and use in source and binary forms, with or without modification, are permitted
# provided that the following conditions are met:
#
# Redistributions of source code must retain the above copyright notice, this list of conditions
# and the following disclaimer.
#
# Redistributions in binary form must reproduce the above copyright notice, this list of
# conditions and the following disclaimer in the documentation and/or other materials provided
# with the distribution.
#
# THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS" AND ANY EXPRESS OR
# IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE IMPLIED WARRANTIES OF MERCHANTABILITY AND
# FITNESS FOR A PARTICULAR PURPOSE ARE DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT HOLDER OR
# CONTRIBUTORS BE LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR CONSEQUENTIAL
# DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR SERVICES; LOSS OF USE,
# DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER
# IN CONTRACT, STRICT LIABILITY, OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT
# OF THE USE OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.

"""fairchem's samplers, ported for testing: StatefulDistributedSampler, resumed through its
start iteration, and the two batch samplers, BalancedBatchSampler and MaxAtomDistributedBatchSampler.

Ported from fairchem-core 2.24.0 (MIT, notice above). Its modules import numba and
fairchem's datasets, and the wheel pins its own torch, so the suite certifies this port.

``StatefulDistributedSampler`` (``fairchem/core/common/data_parallel.py``), verbatim but for
its log line. It is torch's DistributedSampler whose pass skips ``start_iter * batch_size``
indices of the rank's share; fairchem's training unit resumes it with
``set_epoch_and_start_iteration(epoch, start_iter)``, the steps taken of the epoch, which
its checkpoint keeps: there is no ``state_dict``. The factory declares that entry point
(``adapters/resumed_by_count.py``), with ``batch_size`` 1, so that a step is one index and
a resume can fall between any two. Its ``__len__`` is DistributedSampler's: after a
start, it still counts the whole epoch.

``BalancedBatchSampler`` and ``_balanced_partition`` (the same file), and
``MaxAtomDistributedBatchSampler`` and ``get_batches``
(``fairchem/core/datasets/samplers/max_atom_distributed_sampler.py``), verbatim but for:

- ``_balanced_partition`` and ``get_batches`` are plain Python and numpy, not ``numba.njit``:
  the same statements, with ``numba.typed.List`` as a list, and the indices as the Python
  ints numba returns. ``np.argsort(-sizes)`` compiled by numba is numba's own quicksort,
  not numpy's: the two order items of equal size differently (numpy's is not stable even
  on 4 items), and so deal them to other ranks. The port calls :func:`_numba_argsort`,
  numba 0.68.1's quicksort run as Python (its ``make_py_quicksort``, notice above). Against
  fairchem's ``@numba.njit`` functions under numba 0.68.1, on 3000 random cases each, both
  ports return the same values. One input differs in how it fails: an empty dataset, whose
  ``np.array([])`` of atoms is float64, fails numba's typing (``TypingError``: a float
  appended to its int64 list of atom counts) before ``get_batches`` runs, where the port
  runs and fails its ``assert len(natoms_list) > 0``: both raise in the constructor.
- ``distutils.all_gather(tensor, device)`` is ``_all_gather``, its body for a tensor:
  ``torch.distributed.all_gather`` of the same tensor into zeros like it, over the default
  group (gloo on the CPU in the suite's groups), the tensor itself where the world is 1.
  ``distutils.get_device_for_local_rank()``, the default device, is ``"cpu"`` (the original
  gives ``cuda:N`` where CUDA is available). ``gp_utils.initialized()`` is False: no graph
  parallelism (its ``torch.unique`` of the gathered items, and MaxAtom's ``min_atoms`` check
  against the graph-parallel world, never run).
- fairchem's ``UnsupportedDatasetError`` (a ``ValueError``) is defined here; ``@override`` and
  ``@deprecated`` decorators are left out.
- The dataset is :class:`NatomsDataset`: a torch ``Dataset`` whose ``natoms`` metadata is the
  suite's item lengths, an int64 array read as fairchem's ``BaseDataset.get_metadata`` reads
  its metadata arrays (``[natoms[i] for i in idx]`` for a list).

Their factories (the batch sampler convention, docs/batch-samplers.md) play fairchem's
training unit: it builds a batch sampler with the rank and world size of the process group
(``dataloader_builder.get_dataloader``), and begins every epoch with
``set_epoch_and_start_iteration(epoch, 0)`` (``mlip_unit.set_sampler_state``), which is the
``set_epoch`` the suite calls (:class:`EpochsAsTheUnitSets`); every other argument is the
constructor's default. ``MaxAtomDistributedBatchSampler`` has no ``set_epoch`` of its own.
"""

from __future__ import annotations

import heapq
import logging
import math
import time
from collections.abc import Iterator
from typing import Any, Literal

import numpy as np
import torch
import torch.distributed
from torch.utils.data import BatchSampler, Dataset, DistributedSampler, Sampler

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


# --- BalancedBatchSampler, from fairchem/core/common/data_parallel.py ---


class UnsupportedDatasetError(ValueError):  # fairchem/core/datasets/base_dataset.py
    pass


class NatomsDataset(Dataset):
    """The suite's items, each ``lengths[i]`` atoms: what both batch samplers read of a
    fairchem dataset (its length, and its ``natoms`` metadata array)."""

    def __init__(self, lengths: list[int]) -> None:
        self._metadata = {"natoms": np.asarray(lengths, dtype=np.int64)}

    def __len__(self) -> int:
        return len(self._metadata["natoms"])

    def __getitem__(self, idx: int) -> int:
        return idx

    # BaseDataset's, verbatim
    def metadata_hasattr(self, attr) -> bool:
        return attr in self._metadata

    def get_metadata(self, attr, idx):
        if attr in self._metadata:
            metadata_attr = self._metadata[attr]
            if isinstance(idx, list):
                return [metadata_attr[_idx] for _idx in idx]
            return metadata_attr[idx]
        return None


SMALL_QUICKSORT = 15  # numba's: under this size, an insertion sort


def _numba_argsort(keys: np.ndarray) -> np.ndarray:
    """``np.argsort(keys)`` as a ``numba.njit`` function computes it: numba's quicksort
    (``numba/misc/quicksort.py``, ``run_quicksort1`` with ``is_argsort``), median-of-three
    partitions down to insertion sorts of fewer than 16 items, in Python."""
    R = np.arange(keys.size)  # numba's names
    A = keys

    def insertion_sort(low: int, high: int) -> None:
        if high <= low:
            return
        for i in range(low + 1, high + 1):
            k = R[i]
            v = A[k]
            j = i
            while j > low and v < A[R[j - 1]]:
                R[j] = R[j - 1]
                j -= 1
            R[j] = k

    def partition(low: int, high: int) -> int:
        mid = (low + high) >> 1
        if A[R[mid]] < A[R[low]]:
            R[low], R[mid] = R[mid], R[low]
        if A[R[high]] < A[R[mid]]:
            R[high], R[mid] = R[mid], R[high]
        if A[R[mid]] < A[R[low]]:
            R[low], R[mid] = R[mid], R[low]
        pivot = A[R[mid]]
        R[high], R[mid] = R[mid], R[high]
        i = low
        j = high - 1
        while True:
            while i < high and A[R[i]] < pivot:
                i += 1
            while j >= low and pivot < A[R[j]]:
                j -= 1
            if i >= j:
                break
            R[i], R[j] = R[j], R[i]
            i += 1
            j -= 1
        R[i], R[high] = R[high], R[i]
        return i

    if len(A) < 2:
        return R
    stack = [(0, len(A) - 1)]
    while stack:
        low, high = stack.pop()
        while high - low >= SMALL_QUICKSORT:
            i = partition(low, high)
            if high - i > i - low:  # push the larger side
                if high > i:
                    stack.append((i + 1, high))
                high = i - 1
            else:
                if i > low:
                    stack.append((low, i - 1))
                low = i + 1
        insertion_sort(low, high)
    return R


def _balanced_partition(sizes, num_parts: int):  # port: not @numba.njit
    """
    Greedily partition the given set by always inserting
    the largest element into the smallest partition.
    """
    sort_idx = _numba_argsort(-sizes)  # Sort in descending order (port: numba's np.argsort)
    # port: int(idx), the Python ints numba returns
    heap = [(sizes[idx], [int(idx)]) for idx in sort_idx[:num_parts]]
    heapq.heapify(heap)
    for idx in sort_idx[num_parts:]:
        smallest_part = heapq.heappop(heap)
        new_size = smallest_part[0] + sizes[idx]
        new_idx = smallest_part[1] + [int(idx)]  # TODO should this be append to save time/space
        heapq.heappush(heap, (new_size, new_idx))
    return [part[1] for part in heap]


def _all_gather(data: torch.Tensor, device=None) -> list[torch.Tensor]:
    """fairchem's ``distutils.all_gather`` for a tensor, over the default group."""
    if torch.distributed.get_world_size() == 1:
        return data  # type: ignore[return-value]  # as fairchem's: the tensor itself
    tensor = data
    if device is not None:
        tensor = tensor.to(device)
    tensor_list = [tensor.new_zeros(tensor.shape) for _ in range(torch.distributed.get_world_size())]
    torch.distributed.all_gather(tensor_list, tensor)
    return tensor_list


def _gp_initialized() -> bool:  # gp_utils.initialized(): no graph parallelism here
    return False


def _ensure_supported(dataset: Any):
    if not isinstance(dataset, Dataset):
        raise UnsupportedDatasetError("BalancedBatchSampler requires a dataset.")

    if not dataset.metadata_hasattr("natoms"):  # type: ignore[attr-defined]
        raise UnsupportedDatasetError(
            "BalancedBatchSampler requires a dataset that has a metadata attributed with number of atoms."
        )

    logging.debug(f"BalancedBatchSampler: Resolved dataset to {type(dataset)}")
    return dataset


class BalancedBatchSampler(BatchSampler):
    sampler: Any  # port: a StatefulDistributedSampler (BatchSampler's is an iterable of indices)

    def __init__(
        self,
        dataset: Dataset,
        *,
        batch_size: int,
        num_replicas: int,
        rank: int,
        device: (torch.device | None) = None,  # deprecated, unused variable for backwards compat
        seed: int,
        mode: bool | Literal["atoms"] = "atoms",
        shuffle: bool = True,
        on_error: Literal["warn_and_balance", "warn_and_no_balance", "raise"] = "raise",
        drop_last: bool = False,
    ):
        self.disabled = False
        self.on_error = on_error

        if mode is False:
            logging.warning(f"Disabled BalancedBatchSampler because {mode=}.")
            self.disabled = True
        elif mode.lower() != "atoms":  # type: ignore[union-attr]  # as fairchem's: mode=True fails here
            raise ValueError(f"Only mode='atoms' or mode=True is supported, got {mode=}.")
        elif num_replicas == 1:
            logging.warning(f"Disabled BalancedBatchSampler because {num_replicas=}.")
            self.disabled = True

        try:
            dataset = _ensure_supported(dataset)
        except UnsupportedDatasetError as error:
            if self.on_error == "raise":
                raise error
            if self.on_error == "warn_and_balance":
                logging.warning(
                    f"Failed to get data sizes from metadata, loading data to get sizes (THIS IS SLOW). {error}"
                )
            elif self.on_error == "warn_and_no_balance":
                logging.warning(f"Failed to get data sizes, falling back to uniform partitioning. {error}")
            else:
                raise ValueError(f"Unknown on_error={self.on_error}") from error

        sampler = StatefulDistributedSampler(
            dataset,
            num_replicas=num_replicas,
            rank=rank,
            shuffle=shuffle,
            drop_last=drop_last,
            batch_size=batch_size,
            seed=seed,
        )

        super().__init__(sampler, batch_size=batch_size, drop_last=drop_last)
        # port: distutils.get_device_for_local_rank() is "cpu" here
        self.device = device if device is not None else "cpu"

        logging.info(f"Created BalancedBatchSampler with {sampler=}, {batch_size=}, {drop_last=}")

    def _get_natoms(self, batch_idx: list[int]):
        if self.sampler.dataset.metadata_hasattr("natoms"):
            return np.array(self.sampler.dataset.get_metadata("natoms", batch_idx)).reshape(-1)
        if self.on_error == "warn_and_balance":
            return np.array([self.sampler.dataset[idx].num_nodes for idx in batch_idx])
        return None

    def set_epoch_and_start_iteration(self, epoch: int, start_iteration: int) -> None:
        if not isinstance(self.sampler, StatefulDistributedSampler):
            if start_iteration != 0:
                raise NotImplementedError(
                    f"{type(self.single_sampler)} does not support resuming from a nonzero step."  # type: ignore[attr-defined]
                )
            self.sampler.set_epoch(epoch)
        else:
            self.sampler.set_epoch_and_start_iteration(epoch, start_iteration)

    def set_epoch(self, epoch: int) -> None:
        if isinstance(self.sampler, DistributedSampler):
            self.sampler.set_epoch(epoch)

    @staticmethod
    def _dist_enabled():
        return torch.distributed.is_available() and torch.distributed.is_initialized()

    def __iter__(self):
        if self.disabled or not self._dist_enabled():
            yield from super().__iter__()
            return

        for batch_idx in super().__iter__():
            sizes = self._get_natoms(batch_idx)
            if sizes is None:  # on_error == "warn_and_no_balance" is set
                yield batch_idx
                continue

            idx_sizes = torch.stack(
                [
                    torch.tensor(batch_idx, device=self.device),
                    torch.tensor(sizes, device=self.device),
                ]
            )
            idx_sizes_all: Any = _all_gather(idx_sizes, device=self.device)  # port: typed for mypy
            idx_sizes_all = torch.cat(idx_sizes_all, dim=-1).cpu()
            if _gp_initialized():
                idx_sizes_all = torch.unique(input=idx_sizes_all, dim=1)
            idx_all = idx_sizes_all[0]
            sizes_all = idx_sizes_all[1]

            local_idx_balanced = _balanced_partition(
                sizes_all.numpy(),
                num_parts=self.sampler.num_replicas,
            )
            # Since DistributedSampler pads the last batch
            # this should always have an entry for each replica.
            yield idx_all[local_idx_balanced[self.sampler.rank]]


# --- MaxAtomDistributedBatchSampler, from fairchem/core/datasets/samplers/max_atom_distributed_sampler.py ---


def get_batches(  # port: not @nb.njit
    natoms_list: np.ndarray,  # List of number of atoms in each sample
    indices: np.ndarray,  # Indices of the samples
    max_atoms: int,  # Maximum number of atoms allowed in a batch
    min_atoms: int,  # Minimum number of atoms allowed in a batch
) -> tuple[list[list[int]], list[int], int]:
    """
    Greedily creates batches from a list of samples with varying numbers of atoms.

    Args:
    natoms_list: Array of number of atoms in each sample.
    indices: Array of indices of the samples.
    max_atoms: Maximum number of atoms allowed in a batch.

    Returns:
    tuple[list[list[int]], list[int], int]:
        A tuple containing a list of batches, a list of the total number of atoms in each batch,
        and the number of samples that were filtered out because they exceeded the maximum number of atoms.
    """

    # Ensure the inputs are valid
    assert max_atoms > 0
    assert len(natoms_list) > 0
    assert len(natoms_list) == len(indices)

    # Initialize variables to keep track of the batches and the total number of atoms in each batch
    batches = []  # List of batches, where each batch is a list of indices
    run_sum = 0  # Running total of the number of atoms in the current batch
    cur_batch: list[int] = []  # Current batch being constructed (port: a list, not nb.typed.List)
    atom_counts: list[int] = []  # List of total number of atoms in each batch
    samples_filtered = 0  # Number of samples filtered out because they exceeded the maximum number of atoms

    # Iterate over the samples
    for idx, atoms in zip(indices.tolist(), natoms_list.tolist()):  # noqa: B905  # port: .tolist(), numba's int64s as ints
        # If the sample has too many atoms, filter it out
        if atoms > max_atoms:
            samples_filtered += 1
            continue

        # If adding the sample to the current batch would not exceed the maximum number of atoms, add it
        if run_sum + atoms <= max_atoms:
            cur_batch.append(idx)
            run_sum += atoms
        # Otherwise, start a new batch
        else:
            if run_sum >= min_atoms:
                batches.append(cur_batch)
                atom_counts.append(run_sum)
            cur_batch = [idx]
            run_sum = atoms

    # Add the last batch
    if run_sum >= min_atoms:
        batches.append(cur_batch)
        atom_counts.append(run_sum)

    # Return the batches, atom counts, and the number of samples filtered out
    return [list(x) for x in batches], list(atom_counts), samples_filtered


class MaxAtomDistributedBatchSampler(Sampler[list[int]]):
    """
    A custom batch sampler that distributes batches across multiple GPUs to ensure efficient training.

    Args:
    dataset (BaseDataset): The dataset to sample from.
    max_atoms (int): The maximum number of atoms allowed in a batch.
    num_replicas (int): The number of GPUs to distribute the batches across.
    rank (int): The rank of the current GPU.
    seed (int): The seed for shuffling the dataset.
    shuffle (bool): Whether to shuffle the dataset. Defaults to True.
    drop_last (bool): Whether to drop the last batch if its size is less than the maximum allowed size. Defaults to False.

    This batch sampler is designed to work with the BaseDataset class and is optimized for distributed training.
    It takes into account the number of atoms in each sample and ensures that the batches are distributed evenly across GPUs.
    """

    def __init__(
        self,
        dataset: NatomsDataset,
        max_atoms: int,
        num_replicas: int,
        rank: int,
        seed: int,
        shuffle: bool = True,
        drop_last: bool = False,
        min_atoms: int = 0,
    ) -> None:
        self.dataset = dataset
        self.max_atoms = max_atoms
        self.min_atoms = min_atoms
        self.num_replicas = num_replicas
        self.rank = rank
        assert self.num_replicas > 0
        assert self.rank < self.num_replicas

        # port: gp_utils.initialized() is False, so its min_atoms check is left out

        self.seed = seed
        self.shuffle = shuffle
        self.drop_last = drop_last

        self.epoch = 0
        self.start_iter = 0

        # we pre-create the batches here and can only do this once, otherwise every time we get this iterator we might get a different number of batches
        self.all_batches = self._prepare_batches()
        # If the dataset length is evenly divisible by # of replicas, then there
        # is no need to drop any data, since the dataset will be split equally.
        if self.drop_last and len(self.all_batches) % self.num_replicas != 0:
            # Split to nearest available length that is evenly divisible.
            # This is to ensure each rank receives the same amount of data when
            # using this Sampler.
            self.num_samples = math.ceil((len(self.all_batches) - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(len(self.all_batches) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        assert len(self.all_batches) >= self.num_replicas, "there are less batches than ranks!"

    def _prepare_batches(self) -> list[list[int]]:
        # shuffle is not optional here since the metadata tend to be sorted by atom count and the resulting batches will be highly uneven
        rng = np.random.default_rng(self.seed)
        original_indices = rng.permutation(len(self.dataset))
        # TODO: this is slow
        t0 = time.time()
        natoms_list = self.dataset.get_metadata("natoms", original_indices.tolist())
        t1 = time.time()
        indices, atoms_count, samples_filtered = get_batches(
            np.array(natoms_list), original_indices, self.max_atoms, self.min_atoms
        )
        t2 = time.time()
        logging.info(f"Sampler batch generation times: get natoms: {t1 - t0}, total: {t2 - t0}")
        logging.info(
            f"MaxAtomDistributedSampler generated {len(indices)} batches with total atoms {np.sum(natoms_list)}, max: {max(atoms_count)}, min: {min(atoms_count)}, mean: {np.mean(atoms_count)}, std: {np.std(atoms_count)}"
        )
        logging.info(f"{samples_filtered} samples were removed because they exceed {self.max_atoms} atoms")
        return indices

    def __len__(self) -> int:
        return self.num_samples

    def __iter__(self) -> Iterator[list[int]]:
        # based on current rank, return an iterator over batches
        if self.shuffle:
            # deterministically shuffle based on epoch and seed
            g = torch.Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = torch.randperm(len(self.all_batches), generator=g).tolist()
        else:
            indices = list(range(len(self.all_batches)))

        if not self.drop_last:
            # add extra samples to make it evenly divisible
            padding_size = self.total_size - len(indices)
            if padding_size <= len(indices):
                indices += indices[:padding_size]
            else:
                indices += (indices * math.ceil(padding_size / len(indices)))[:padding_size]
        else:
            # remove tail of data to make it evenly divisible.
            indices = indices[: self.total_size]

        assert len(indices) == self.total_size

        indices = indices[self.rank : self.total_size : self.num_replicas]
        assert len(indices) == self.num_samples
        # slice of batch indices
        batch_slice = [self.all_batches[i] for i in indices]
        assert self.start_iter < len(batch_slice), (
            f"starting iteration {self.start_iter} must be less than size of the slice of batches! {len(batch_slice)}"
        )
        return iter(batch_slice[self.start_iter :])

    def set_epoch_and_start_iteration(self, epoch: int, start_iter: int) -> None:
        self.epoch = epoch
        self.start_iter = start_iter


# --- The batch samplers' factories ---


class EpochsAsTheUnitSets:
    """A fairchem batch sampler as its training unit drives it: every epoch begins with
    ``set_epoch_and_start_iteration(epoch, 0)`` (``mlip_unit.set_sampler_state``)."""

    def __init__(self, sampler: Any) -> None:
        self.sampler = sampler

    def set_epoch(self, epoch: int) -> None:
        self.sampler.set_epoch_and_start_iteration(epoch, 0)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.sampler)

    def __len__(self) -> int:
        return len(self.sampler)


def balanced_batch_sampler(
    lengths: list[int], *, num_replicas: int, rank: int, batch_size: int, seed: int = 0
) -> EpochsAsTheUnitSets:
    """fairchem's ``BalancedBatchSampler(dataset, batch_size=..., num_replicas, rank, seed)``,
    its defaults otherwise (``mode="atoms"``, ``shuffle=True``, ``on_error="raise"``,
    ``drop_last=False``), over items of ``lengths`` atoms. Its ``batch_size`` is each rank's,
    so a global step holds ``num_replicas * batch_size`` items: the suite's ``batch_size``,
    the step's, is given as ``batch_size // num_replicas`` per rank (the suite draws it from
    W to 8W, so at least 1), and a step holds at most the suite's ``batch_size``. Inside a
    process group it gathers each step's items from every rank and cuts them again, by atoms,
    into the ranks' micro-batches; outside one, and on one rank, it is a plain BatchSampler
    over a DistributedSampler: so it is judged in real groups only."""
    sampler = BalancedBatchSampler(
        NatomsDataset(lengths),
        batch_size=batch_size // num_replicas,
        num_replicas=num_replicas,
        rank=rank,
        seed=seed,
    )
    return EpochsAsTheUnitSets(sampler)


balanced_batch_sampler.needs_process_group = True  # type: ignore[attr-defined]


def max_atom_distributed_batch_sampler(
    lengths: list[int], *, num_replicas: int, rank: int, max_tokens: int, seed: int = 0
) -> EpochsAsTheUnitSets:
    """fairchem's ``MaxAtomDistributedBatchSampler(dataset, max_atoms=max_tokens, num_replicas,
    rank, seed)``, its defaults otherwise (``shuffle=True``, ``drop_last=False``,
    ``min_atoms=0``), over items of ``lengths`` atoms: a batch's cost is its items' atoms
    added up, as the suite's default cost."""
    sampler = MaxAtomDistributedBatchSampler(
        NatomsDataset(lengths), max_atoms=max_tokens, num_replicas=num_replicas, rank=rank, seed=seed
    )
    return EpochsAsTheUnitSets(sampler)
