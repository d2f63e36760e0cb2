"""Hugging Face transformers (PyPI ``transformers``): the length-grouped samplers of
``Trainer(group_by_length=True)``, ``BatchRebalanceSampler`` (micro-batches balanced by cost),
and ``IterableDatasetShard``, a streaming dataset.

    sampler_conformance.adapters.transformers:DistributedLengthGroupedSampler   contract torch
    sampler_conformance.adapters.transformers:TrainerGroupByLength              contract batch
    sampler_conformance.adapters.transformers:BatchRebalanceSampler             contract micro_batches
    sampler_conformance.adapters.transformers:IterableDatasetShard              contract stream_padded

``DistributedLengthGroupedSampler`` is what the Trainer used under DDP before 4.31.0, still
shipped in ``transformers.trainer_pt_utils``. It is torch's ``DistributedSampler`` with another global order: a permutation seeded with
``seed + epoch``, cut into mega-batches sorted by length, the longest item first; then padded
from the head (or cut, with ``drop_last``) and dealt strided. The suite's dataset has no
lengths, so item ``i`` is given ``ITEM_LENGTH(i)``, a spread of 1 to 509 that is the same in
every process; ``batch_size`` (which sizes the mega-batches) is ``BATCH_SIZE``. It has no
``shuffle``: it always shuffles. Without ``num_replicas`` or ``rank`` it reads them from the
process group itself.
"""

from __future__ import annotations

from typing import Any

from . import fill_from_process_group, needs, require
from .accelerate import GeneratorShuffledIds

BATCH_SIZE = 4


def ITEM_LENGTH(index: int) -> int:
    return 1 + (index * 7919) % 509


@needs("transformers", "transformers")
def DistributedLengthGroupedSampler(
    dataset: Any, num_replicas: int | None = None, rank: int | None = None, seed: int = 0, drop_last: bool = False
) -> Any:
    trainer_pt_utils = require(
        "transformers.trainer_pt_utils", "transformers", f"{__name__}:DistributedLengthGroupedSampler"
    )
    return trainer_pt_utils.DistributedLengthGroupedSampler(
        BATCH_SIZE,
        num_replicas=num_replicas,
        rank=rank,
        seed=seed,
        drop_last=drop_last,
        lengths=[ITEM_LENGTH(i) for i in range(len(dataset))],
    )


# TrainingArguments.gradient_accumulation_steps: the Trainer groups by length over this many batches.
GRADIENT_ACCUMULATION_STEPS = 1


@needs("transformers", "transformers")
@needs("accelerate", "accelerate")
def TrainerGroupByLength(
    dataset: Any,
    num_replicas: int | None = None,
    rank: int | None = None,
    seed: int = 42,
    drop_last: bool = False,
    batch_size: int = 1,
) -> Any:
    """What ``Trainer(train_sampling_strategy="group_by_length")`` feeds process ``rank``
    since 4.31.0 (transformers 5.23.0 with accelerate 1.15.0):

    - ``LengthGroupedSampler(batch_size * gradient_accumulation_steps, lengths=...)`` with no
      generator (``trainer.py:1100-1105``): each pass draws ``torch.randperm`` from the
      process's global generator (``trainer_pt_utils.py:504``);
    - in the DataLoader's ``BatchSampler`` (``trainer.py:1040-1049``), which
      ``accelerator.prepare`` wraps in a ``BatchSamplerShard`` with the defaults
      (``split_batches=False``, ``even_batches=True``). The Trainer's accelerator has
      ``use_seedable_sampler=True`` (``trainer_pt_utils.py:1508``), so accelerate attaches no
      generator and synchronizes none (``accelerate/data_loader.py:1245-1272``): the ranks
      agree only while every process has drawn alike from its global generator;
    - ``set_seed(seed)``, as ``Trainer.__init__`` does (``trainer.py:419``), when it is built.

    At ``num_replicas=1`` accelerate would not shard; this wraps anyway, as
    ``adapters/accelerate.py``'s ``BatchSamplerShard`` does. It has no ``shuffle``: it always shuffles.
    """
    adapter = f"{__name__}:TrainerGroupByLength"
    pt_utils = require("transformers.trainer_pt_utils", "transformers", adapter)
    trainer_utils = require("transformers.trainer_utils", "transformers", adapter)
    data_loader = require("accelerate.data_loader", "accelerate", adapter)
    from torch.utils.data import BatchSampler

    num_processes, process_index = fill_from_process_group(num_replicas, rank)
    lengths = [ITEM_LENGTH(i) for i in range(len(dataset))]
    sampler = pt_utils.LengthGroupedSampler(batch_size * GRADIENT_ACCUMULATION_STEPS, lengths=lengths)
    batches = BatchSampler(sampler, batch_size=batch_size, drop_last=drop_last)
    trainer_utils.set_seed(seed)
    return data_loader.BatchSamplerShard(batches, num_processes=num_processes, process_index=process_index)


@needs("transformers", "transformers")
def BatchRebalanceSampler(lengths: list[int], *, num_replicas: int, rank: int, batch_size: int, seed: int = 0) -> Any:
    """transformers' ``trainer_pt_utils.BatchRebalanceSampler`` (5.18.0), what
    ``Trainer(train_sampling_strategy="batch_rebalance")`` builds, with one micro-batch per step
    and its defaults otherwise: ``BatchRebalanceSampler(lengths, effective_batch_size=batch_size,
    dp_size=num_replicas, grad_accum=1, seed=seed, rank=rank)`` (``shuffle=True``,
    ``drop_last=True``). Each step it takes ``batch_size`` items of a permutation seeded with
    ``seed + epoch``, sorts them by length and cuts them into W groups of balanced cost, of
    varying sizes; rank r yields one of them. Contract ``micro_batches``."""
    trainer_pt_utils = require("transformers.trainer_pt_utils", "transformers", f"{__name__}:BatchRebalanceSampler")
    return trainer_pt_utils.BatchRebalanceSampler(
        lengths, effective_batch_size=batch_size, dp_size=num_replicas, grad_accum=1, seed=seed, rank=rank
    )


@needs("transformers", "transformers")
def IterableDatasetShard(
    dataset_size: int, *, rank: int, world_size: int, seed: int = 0, shuffle: bool = False, batch_size: int = 1
) -> Any:
    """transformers' ``trainer_pt_utils.IterableDatasetShard`` (5.18.0) over the user's dataset of
    ``adapters/accelerate.py`` (:class:`GeneratorShuffledIds`: it shuffles with the
    ``torch.Generator`` in its ``generator``, as the class's docstring asks, and has no
    ``set_epoch``), contract ``stream_padded``.

    ``IterableDatasetShard(dataset, batch_size=, drop_last=False, num_processes=world_size,
    process_index=rank, seed=seed)``: 5.18.0's Trainer no longer builds it (its DataLoaders go
    through accelerate's ``prepare``, whose own ``IterableDatasetShard`` is adapted in
    ``adapters/accelerate.py``; ``trainer.py`` only recognises this one, lines 985 and 2966),
    so it is built as a script would, with ``drop_last=False``, the default of the class and
    of ``TrainingArguments.dataloader_drop_last``. Unlike accelerate's, it takes ``seed`` and
    reseeds the generator with ``seed + epoch`` before each iteration (``trainer_pt_utils.py:
    1076-1083``), and its epoch starts at 0 (1068). Process r takes the r-th slice of
    ``batch_size`` of each global batch of ``batch_size x W`` items, and the last incomplete
    global batch is completed "with indices from the beginning" (its docstring): every
    process yields as many items, some repeated, hence ``stream_padded`` (up to
    ``batch_size x W - 1`` repeats, where the contract allows fewer than W x workers).
    """
    trainer_pt_utils = require("transformers.trainer_pt_utils", "transformers", f"{__name__}:IterableDatasetShard")
    return trainer_pt_utils.IterableDatasetShard(
        GeneratorShuffledIds(dataset_size, seed, shuffle),
        batch_size=batch_size,
        drop_last=False,
        num_processes=world_size,
        process_index=rank,
        seed=seed,
    )


# DataLoader workers unpickle the shard, which imports its module: the fork server imports it once.
IterableDatasetShard.worker_modules = ("transformers.trainer_pt_utils",)  # type: ignore[attr-defined]
