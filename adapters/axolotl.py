"""Axolotl (PyPI ``axolotl``): ``SequenceParallelRepeatRandomSampler`` as its GRPO trainer
builds it, with context parallelism: contract ``groups+mesh``.

``AxolotlGRPOSequenceParallelTrainer._get_train_sampler`` (axolotl 0.19.0,
``core/trainers/grpo/trainer.py``) builds ``SequenceParallelRepeatRandomSampler(dataset,
mini_repeat_count=num_generations, world_size=, rank=, batch_size=effective_batch_size //
num_generations // context_parallel_size, repeat_count=num_iterations *
gradient_accumulation_steps, context_parallel_size=, shuffle=, seed=, drop_last=True)``,
``effective_batch_size`` being ``per_device_train_batch_size * world_size *
gradient_accumulation_steps``; each rank's DataLoader batches its indices. The sampler takes
its own rank and gives every rank of one sequence-parallel group (ranks ``rank //
context_parallel_size``) the same indices. Here the loader's batch size is B, G is
``num_generations`` (``repeats``), one step of accumulation and one iteration: the sampler's
batch is ``W * B // G // context_parallel_size``, what the trainer passes.

On a device mesh the factory takes the mesh (``device_mesh=``): the world size and rank are
the mesh's, and ``context_parallel_size`` is the size of one data replica, its dimensions
other than the data ones (``torch_iterable.data_coordinates``); without one, 1.

The package's ``grpo/__init__`` imports its trainers (trl, transformers, huggingface_hub);
the sampler's module imports torch alone, so it is loaded from its file, and ``pip install
--no-deps axolotl`` is enough.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from torch.utils.data import BatchSampler

from . import fill_from_process_group, package_file
from .torch_iterable import data_coordinates

DISTRIBUTION = "axolotl"
SAMPLER_FILE = "core/trainers/grpo/sampler.py"


def _sampler_module() -> ModuleType:
    return package_file("axolotl", SAMPLER_FILE, DISTRIBUTION)


def SequenceParallelRepeatRandomSampler(  # noqa: N802  # named as the sampler it builds
    dataset: Any,
    num_replicas: int | None = None,
    rank: int | None = None,
    shuffle: bool = True,
    seed: int = 0,
    drop_last: bool = False,
    batch_size: int = 1,
    repeats: int = 2,
    device_mesh: Any = None,
) -> BatchSampler:
    if device_mesh is not None:
        world_size, rank = device_mesh.size(), device_mesh.get_rank()
        context_parallel_size = world_size // data_coordinates(device_mesh)[1]
    else:
        (world_size, rank), context_parallel_size = fill_from_process_group(num_replicas, rank), 1
    sampler = _sampler_module().SequenceParallelRepeatRandomSampler(
        dataset,
        mini_repeat_count=repeats,
        world_size=world_size,
        rank=rank,
        batch_size=world_size * batch_size // repeats // context_parallel_size,
        repeat_count=1,
        context_parallel_size=context_parallel_size,
        shuffle=shuffle,
        seed=seed,
        drop_last=True,
    )
    return BatchSampler(sampler, batch_size=batch_size, drop_last=drop_last)
