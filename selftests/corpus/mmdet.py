# The class ported below (AspectRatioBatchSampler) carries OpenMMLab's notice, from mmdetection's
# LICENSE (Apache License 2.0, http://www.apache.org/licenses/LICENSE-2.0):
#
# Copyright (c) OpenMMLab. All rights reserved.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file except
# in compliance with the License. Unless required by applicable law or agreed to in writing,
# software distributed under the License is distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR
# CONDITIONS OF ANY KIND, either express or implied. See the License for the specific language
# governing permissions and limitations under the License.
# port: changed from the shipped file: only what is marked ``# port:``.

"""mmdet's ``AspectRatioBatchSampler``, ported for testing, as mmengine's training loop reads it.

Ported from open-mmlab/mmdetection, ``mmdet/datasets/samplers/batch_sampler.py`` (mmdet 3.x,
as at commit 0869b5f, Apache-2.0, notice above). mmdet needs the compiled mmcv, which does not install here, so the
suite certifies this port. It is a port for testing, not a fork to use: the logic is the
shipped one line for line, including what the suite reports against it. Each change is marked
``# port:``.

mmdet's configs build it as ``batch_sampler=dict(type='AspectRatioBatchSampler')`` over
``sampler=dict(type='DefaultSampler', shuffle=True)``: mmengine's ``Runner.build_dataloader``
gives it the DefaultSampler, the loader's ``batch_size`` and ``drop_last=False`` unless the
config sets it. Each epoch mmengine's ``EpochBasedTrainLoop`` calls
``dataloader.batch_sampler.sampler.set_epoch(epoch)``: :class:`AsTheLoopReads` passes
``set_epoch`` on the same way. Each item's width and height reach it through
``sampler.dataset.get_data_info(idx)``: :class:`SizedImages` answers with a portrait (3 x 4)
or a landscape (4 x 3) image, by the suite's ``aspects=``.

- :func:`aspect_ratio_batch_sampler`: over mmengine's own ``DefaultSampler`` (``round_up=True``,
  through ``sampler_conformance.adapters.mmengine``); needs ``pip install mmengine``.
- :func:`aspect_ratio_over_distributed`: over torch's ``DistributedSampler(drop_last=False)``,
  the same strided share padded from the head for N > 0 (DefaultSampler divides by N at N = 0),
  so that the selftests certify the port where mmengine is not installed (CI).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from torch.utils.data import BatchSampler, Dataset, DistributedSampler, Sampler


class AspectRatioBatchSampler(BatchSampler):
    """A sampler wrapper for grouping images with similar aspect ratio (< 1 or.

    >= 1) into a same batch.

    Args:
        sampler (Sampler): Base sampler.
        batch_size (int): Size of mini-batch.
        drop_last (bool): If ``True``, the sampler will drop the last batch if
            its size would be less than ``batch_size``.
    """

    def __init__(self, sampler: Sampler, batch_size: int, drop_last: bool = False) -> None:
        if not isinstance(sampler, Sampler):
            raise TypeError(f"sampler should be an instance of ``Sampler``, but got {sampler}")
        if not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        self.sampler: Any = sampler  # port: typed Any (it reads the sampler's dataset)
        self.batch_size = batch_size
        self.drop_last = drop_last
        # two groups for w < h and w >= h
        self._aspect_ratio_buckets: list[list[int]] = [[] for _ in range(2)]

    def __iter__(self) -> Iterator[list[int]]:
        for idx in self.sampler:
            data_info = self.sampler.dataset.get_data_info(idx)
            width, height = data_info["width"], data_info["height"]
            bucket_id = 0 if width < height else 1
            bucket = self._aspect_ratio_buckets[bucket_id]
            bucket.append(idx)
            # yield a batch of indices in the same aspect ratio group
            if len(bucket) == self.batch_size:
                yield bucket[:]
                del bucket[:]

        # yield the rest data and reset the bucket
        left_data = self._aspect_ratio_buckets[0] + self._aspect_ratio_buckets[1]
        self._aspect_ratio_buckets = [[] for _ in range(2)]
        while len(left_data) > 0:
            if len(left_data) <= self.batch_size:
                if not self.drop_last:
                    yield left_data[:]
                left_data = []
            else:
                yield left_data[: self.batch_size]
                left_data = left_data[self.batch_size :]

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        else:
            return (len(self.sampler) + self.batch_size - 1) // self.batch_size


# port: what follows is not mmdet's: how the suite builds it, and how mmengine's loop reads it.


class SizedImages(Dataset):
    """The suite's dataset, with mmdet's ``get_data_info(idx)``: item i is a portrait image
    (width 3, height 4) where ``aspects[i]`` is 0, a landscape one (4 x 3) otherwise."""

    def __init__(self, dataset: Any, aspects: Sequence[int]) -> None:
        if len(aspects) != len(dataset):
            raise ValueError(f"aspects= gives {len(aspects)} buckets for a dataset of {len(dataset)} items")
        self.dataset, self.aspects = dataset, list(aspects)

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> Any:
        return self.dataset[index]

    def get_data_info(self, idx: int) -> dict[str, int]:
        portrait = self.aspects[idx] == 0
        return {"width": 3 if portrait else 4, "height": 4 if portrait else 3}


class AsTheLoopReads:
    """A batch sampler read as mmengine's EpochBasedTrainLoop reads it: ``set_epoch`` reaches
    the sampler inside it (``dataloader.batch_sampler.sampler.set_epoch``)."""

    def __init__(self, batch_sampler: AspectRatioBatchSampler) -> None:
        self.batch_sampler = batch_sampler

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self.batch_sampler)

    def __len__(self) -> int:
        return len(self.batch_sampler)

    def set_epoch(self, epoch: int) -> None:
        self.batch_sampler.sampler.set_epoch(epoch)


def aspect_ratio_batch_sampler(
    dataset: Any,
    num_replicas: int | None = None,
    rank: int | None = None,
    shuffle: bool = True,
    seed: int = 0,
    drop_last: bool = False,
    batch_size: int = 1,
    aspects: Sequence[int] = (),
) -> AsTheLoopReads:
    """Over mmengine's DefaultSampler (round_up=True), as mmdet's configs build it."""
    from sampler_conformance.adapters.mmengine import DefaultSampler

    sampler = DefaultSampler(SizedImages(dataset, aspects), num_replicas, rank, shuffle=shuffle, seed=seed)
    return AsTheLoopReads(AspectRatioBatchSampler(sampler, batch_size, drop_last))


def aspect_ratio_over_distributed(
    dataset: Any,
    num_replicas: int | None = None,
    rank: int | None = None,
    shuffle: bool = True,
    seed: int = 0,
    drop_last: bool = False,
    batch_size: int = 1,
    aspects: Sequence[int] = (),
) -> AsTheLoopReads:
    """Over torch's DistributedSampler(drop_last=False): DefaultSampler's share without mmengine."""
    sampler: DistributedSampler[int] = DistributedSampler(
        SizedImages(dataset, aspects), num_replicas, rank, shuffle=shuffle, seed=seed
    )
    return AsTheLoopReads(AspectRatioBatchSampler(sampler, batch_size, drop_last))
