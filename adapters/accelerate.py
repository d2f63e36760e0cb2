"""Hugging Face Accelerate (PyPI ``accelerate``): BatchSamplerShard, contract ``batch``.

``accelerate.prepare_data_loader`` wraps the DataLoader's BatchSampler in a
BatchSamplerShard per process (``num_processes``/``process_index``); with the defaults
(``split_batches=False``, ``even_batches=True``) process r gets whole batches r, r+W, ...
and the last round is completed from the first batches, so every rank gets as many.
"""

from __future__ import annotations

from typing import Any

from . import fill_from_process_group, require, seeded_index_sampler


def BatchSamplerShard(
    dataset: Any,
    num_replicas: int | None = None,
    rank: int | None = None,
    shuffle: bool = True,
    seed: int = 0,
    drop_last: bool = False,
    batch_size: int = 1,
) -> Any:
    data_loader = require(
        "accelerate.data_loader", "accelerate", "sampler_conformance.adapters.accelerate:BatchSamplerShard"
    )
    from torch.utils.data import BatchSampler

    batches = BatchSampler(seeded_index_sampler(dataset, shuffle, seed), batch_size=batch_size, drop_last=drop_last)
    num_processes, process_index = fill_from_process_group(num_replicas, rank)
    return data_loader.BatchSamplerShard(batches, num_processes=num_processes, process_index=process_index)
