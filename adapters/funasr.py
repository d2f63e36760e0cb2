"""FunASR (PyPI ``funasr``): ``CustomDistributedBatchSampler``, contract ``rank_batches``.

FunASR's trainers build it as the DataLoader's ``batch_sampler`` (``batch_sampler:
CustomDistributedBatchSampler`` in their configs): each rank takes a strided share of one
permutation, padded from its head to a multiple of ``batch_size x num_replicas``, and cuts it
into batches of ``batch_size``. It takes no seed (its shuffle is seeded with the epoch), and
it reads its rank and world size from the process group whatever it is given.
"""

from __future__ import annotations

from typing import Any

from . import needs, require


@needs("funasr", "funasr")
def CustomDistributedBatchSampler(
    dataset: Any,
    num_replicas: int | None = None,
    rank: int | None = None,
    shuffle: bool = True,
    drop_last: bool = False,
    batch_size: int = 1,
) -> Any:
    samplers = require(
        "funasr.datasets.audio_datasets.samplers",
        "funasr",
        "sampler_conformance.adapters.funasr:CustomDistributedBatchSampler",
    )
    return samplers.CustomDistributedBatchSampler(
        dataset, batch_size, num_replicas=num_replicas, rank=rank, shuffle=shuffle, drop_last=drop_last
    )
