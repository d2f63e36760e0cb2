"""TRL (PyPI ``trl``): ``RepeatSampler`` as ``GRPOTrainer`` reads it, contract ``groups``.

``GRPOTrainer`` (trl 1.16.0, ``trainer/grpo_trainer.py``, ``_get_train_sampler`` and
``get_train_dataloader``) builds ``RepeatSampler(dataset, mini_repeat_count=num_generations,
batch_size=generation_batch_size // num_generations, repeat_count=num_iterations *
steps_per_generation, shuffle=, seed=)`` and a DataLoader of batch size
``per_device_train_batch_size * steps_per_generation``, which accelerate's ``prepare`` shards
with ``BatchSamplerShard``. Here that loader's batch size is B, ``num_generations`` is G and
the generation batch is W x B (its default), so ``RepeatSampler`` selects W x B / G samples
per generation batch. ``repeat_count`` is 1: the trainer reads each generation batch
``repeat_count`` times in a row but generates from the first reading only and replays its
buffer for the others, so what it trains on is each generation batch once.
"""

from __future__ import annotations

from typing import Any

from torch.utils.data import BatchSampler

from . import fill_from_process_group, needs, require

SPEC = "sampler_conformance.adapters.trl:GRPORepeatSampler"


@needs("trl", "trl")
@needs("accelerate", "accelerate")
def GRPORepeatSampler(
    dataset: Any,
    num_replicas: int | None = None,
    rank: int | None = None,
    shuffle: bool = True,
    seed: int = 0,
    drop_last: bool = False,
    batch_size: int = 1,
    repeats: int = 2,
) -> Any:
    utils = require("trl.trainer.utils", "trl", SPEC)
    data_loader = require("accelerate.data_loader", "accelerate", SPEC)
    num_processes, process_index = fill_from_process_group(num_replicas, rank)
    sampler = utils.RepeatSampler(
        dataset,
        mini_repeat_count=repeats,
        batch_size=num_processes * batch_size // repeats,
        repeat_count=1,
        shuffle=shuffle,
        seed=seed,
    )
    batches = BatchSampler(sampler, batch_size=batch_size, drop_last=drop_last)
    return data_loader.BatchSamplerShard(batches, num_processes=num_processes, process_index=process_index)
