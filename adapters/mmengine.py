"""OpenMMLab MMEngine (PyPI ``mmengine``): DefaultSampler and InfiniteSampler.

- ``DefaultSampler`` (``round_up=True``, its default), contract ``torch``: documented as
  "the same as the DistributedSampler with drop_last=False"; it has no ``drop_last``.
- ``DefaultSamplerNoRoundUp`` (``round_up=False``), contract ``partition``: "won't remove
  or add any samples".
- ``InfiniteSampler``, contract ``infinite``: detectron2's TrainingSampler, per its docs.

MMEngine samplers take no rank arguments: their constructors read ``(rank, world_size)``
from ``mmengine.dist.get_dist_info()`` and never again, so each factory patches that
name for the constructor call only. ``seed`` is always passed: ``seed=None`` makes
MMEngine broadcast a random seed from rank 0, a collective that needs a process group.
A rank outside ``[0, num_replicas)`` is refused here because the process group MMEngine
reads can never report one; without the check the suite would blame MMEngine for a
configuration it cannot be given.
"""

from __future__ import annotations

import threading
from typing import Any
from unittest import mock

from . import fill_from_process_group, needs, require

DISTRIBUTION = "mmengine"
# mock.patch swaps a module attribute: ranks built from several threads must take turns.
_PATCH_LOCK = threading.Lock()


@needs("mmengine", "mmengine")
def DefaultSampler(
    dataset: Any, num_replicas: int | None = None, rank: int | None = None, shuffle: bool = True, seed: int = 0
) -> Any:
    return _construct(
        "DefaultSampler",
        "sampler_conformance.adapters.mmengine:DefaultSampler",
        num_replicas,
        rank,
        dataset,
        shuffle=shuffle,
        seed=seed,
        round_up=True,
    )


@needs("mmengine", "mmengine")
def DefaultSamplerNoRoundUp(
    dataset: Any, num_replicas: int | None = None, rank: int | None = None, shuffle: bool = True, seed: int = 0
) -> Any:
    return _construct(
        "DefaultSampler",
        "sampler_conformance.adapters.mmengine:DefaultSamplerNoRoundUp",
        num_replicas,
        rank,
        dataset,
        shuffle=shuffle,
        seed=seed,
        round_up=False,
    )


@needs("mmengine", "mmengine")
def InfiniteSampler(
    dataset: Any, num_replicas: int | None = None, rank: int | None = None, shuffle: bool = True, seed: int = 0
) -> Any:
    return _construct(
        "InfiniteSampler",
        "sampler_conformance.adapters.mmengine:InfiniteSampler",
        num_replicas,
        rank,
        dataset,
        shuffle=shuffle,
        seed=seed,
    )


def _construct(
    class_name: str, adapter: str, num_replicas: int | None, rank: int | None, dataset: Any, **options: Any
) -> Any:
    world_size, rank = fill_from_process_group(num_replicas, rank)
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {world_size - 1}]")
    sampler_module = require("mmengine.dataset.sampler", DISTRIBUTION, adapter)
    with _PATCH_LOCK, mock.patch.object(sampler_module, "get_dist_info", return_value=(rank, world_size)):
        return getattr(sampler_module, class_name)(dataset, **options)
