"""Hugging Face Accelerate (PyPI ``accelerate``): BatchSamplerShard, contract ``batch``, and
its documented mid-epoch resume (``skip_first_batches``), contract ``batch+resumable``; and
IterableDatasetShard, a streaming dataset, contract ``stream_padded``. On a device mesh
(``prepare_data_loader(torch_device_mesh=...)``): ``PreparedOnMesh``, contract ``batch+mesh``,
and ``PreparedStreamOnMesh``, contract ``stream_padded+mesh`` (docs/meshes.md).

``accelerate.prepare_data_loader`` wraps the DataLoader's BatchSampler in a
BatchSamplerShard per process (``num_processes``/``process_index``); with the defaults
(``split_batches=False``, ``even_batches=True``) process r gets whole batches r, r+W, ...
and the last round is completed from the first batches, so every rank gets as many.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch.utils.data import IterableDataset

from . import fill_from_process_group, needs, require, seeded_index_sampler


@needs("accelerate", "accelerate")
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


@needs("accelerate", "accelerate")
def SkipFirstBatchesResume(
    dataset: Any,
    num_replicas: int | None = None,
    rank: int | None = None,
    shuffle: bool = True,
    seed: int = 0,
    drop_last: bool = False,
    batch_size: int = 1,
) -> Any:
    """accelerate's documented mid-epoch resume, contract ``batch+resumable``.

    What ``Accelerator(dataloader_config=DataLoaderConfiguration(use_seedable_sampler=True,
    data_seed=seed)).prepare(DataLoader(dataset, batch_size=, shuffle=, drop_last=))`` holds on
    process ``rank`` of ``num_replicas`` (accelerate 1.15.0, ``data_loader.py``):

    - ``use_seedable_sampler=True`` (off by default, ``utils/dataclasses.py:884``) is the option
      that makes epochs reproducible: ``prepare_data_loader`` swaps the RandomSampler for a
      ``SeedableRandomSampler`` with ``data_seed`` (1196-1211); each pass it shuffles with
      ``seed + epoch`` (99). Without shuffle the loader keeps its SequentialSampler. An empty
      dataset gets a SequentialSampler too, as in ``BatchSamplerShard`` above: a user's
      ``DataLoader(shuffle=True)`` refuses one.
    - The DataLoader's BatchSampler wrapped in ``BatchSamplerShard`` with the defaults
      ``split_batches=False``, ``even_batches=True`` (1254). At ``num_replicas=1`` accelerate
      does not shard at all (1222-1223), so its last batch stays short; this pads it, like
      ``BatchSamplerShard`` above.

    The returned object plays the documented loop (``docs/source/usage_guides/checkpoint.md``,
    "Restoring the state of the DataLoader"; ``examples/complete_cv_example.py``) with the
    real classes; see :class:`_StepCountResume`.
    """
    data_loader = require(
        "accelerate.data_loader", "accelerate", "sampler_conformance.adapters.accelerate:SkipFirstBatchesResume"
    )
    from torch.utils.data import BatchSampler, SequentialSampler

    if shuffle and len(dataset) > 0:
        sampler = data_loader.SeedableRandomSampler(dataset, data_seed=seed)
    else:
        sampler = SequentialSampler(dataset)
    batches = BatchSampler(sampler, batch_size=batch_size, drop_last=drop_last)
    num_processes, process_index = fill_from_process_group(num_replicas, rank)
    shard = data_loader.BatchSamplerShard(batches, num_processes=num_processes, process_index=process_index)
    return _StepCountResume(dataset, shard, data_loader.SkipBatchSampler)


class _StepCountResume:
    """A prepared loader's ``BatchSamplerShard``, driven as accelerate's docs drive it.

    - ``set_epoch(e)`` forwards as ``train_dataloader.set_epoch`` (``DataLoaderShard.set_epoch``,
      ``data_loader.py:622-639``) does: to the SeedableRandomSampler, which it reaches as
      ``shard.batch_sampler.sampler`` (and as ``shard.sampler``, the same object, that
      ``set_sampler`` hangs on the shard: 1326, 660-666), else to the dataset's own
      ``set_epoch``. The ``iteration`` counter ``DataLoaderShard.__iter__`` re-applies (582,
      610) is not kept: under the suite's protocol it equals the last ``set_epoch``. The docs'
      snippet calls no ``set_epoch``, so a loader prepared afresh resumes in epoch 0's order
      (accelerate #2016, #3242, #4195); the suite's loop calls it, as transformers' Trainer
      calls ``train_dataloader.set_epoch(epoch)`` before ``skip_first_batches``.
    - ``state_dict()`` is ``{"step": count}``, the batches of the current pass the loop has
      trained on: the example's ``overall_step`` within the epoch. A resumed pass counts from
      the skip (``overall_step += resume_step``), and a pass run to its end leaves 0, as the
      example resumes from its epoch's end at the next epoch with nothing skipped. The epoch
      is not stored: the docs' loop keeps it outside the loader (the example derives
      ``starting_epoch`` from its checkpoint's name), and 1.15.0's ``save_state`` saves no
      sampler state for a map-style dataset (``checkpointing.py:131-140``); the suite passes
      it back with ``set_epoch(e)``.
    - ``load_state_dict(state)`` makes the next pass ``SkipBatchSampler(shard,
      skip_batches=step)``, what ``skip_first_batches`` builds (1412); later passes are the
      shard itself ("After the first iteration, go back to ``train_dataloader``").
    """

    def __init__(self, dataset: Any, shard: Any, skip_batch_sampler: Any) -> None:
        self.dataset = dataset
        self.shard = shard
        self.skip_batch_sampler = skip_batch_sampler
        self.step = 0
        self.next_pass: tuple[Any, int] = (shard, 0)  # the batches the next iter() goes through, its first step

    def set_epoch(self, epoch: int) -> None:
        sampler = self.shard.batch_sampler.sampler
        if hasattr(sampler, "set_epoch"):
            sampler.set_epoch(epoch)
        elif hasattr(self.dataset, "set_epoch"):
            self.dataset.set_epoch(epoch)

    def __len__(self) -> int:
        return len(self.next_pass[0])

    def __iter__(self) -> Iterator[list[int]]:
        (batches, self.step), self.next_pass = self.next_pass, (self.shard, 0)
        return self._counted(batches)

    def _counted(self, batches: Any) -> Iterator[list[int]]:
        for batch in batches:
            self.step += 1
            yield batch
        self.step = 0

    def state_dict(self) -> dict[str, int]:
        return {"step": self.step}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.step = int(state["step"])
        self.next_pass = (self.skip_batch_sampler(self.shard, skip_batches=self.step), self.step)


@needs("accelerate", "accelerate")
def PreparedOnMesh(
    dataset: Any,
    num_replicas: int | None = None,
    rank: int | None = None,
    device_mesh: Any = None,
    shuffle: bool = True,
    seed: int = 0,
    drop_last: bool = False,
    batch_size: int = 1,
) -> Any:
    """What ``prepare_data_loader(loader, torch_device_mesh=device_mesh)`` gives a rank of a
    meshed job: the prepared loader's batch sampler, contract ``batch+mesh``.

    accelerate 1.15.0 (``data_loader.py:1129-1165``), given a mesh and outside DeepSpeed, takes
    the data size from the dimensions named ``dp_replicate`` and ``dp_shard`` alone and the data
    rank as ``process_index // (tp size x cp size)``, then wraps the loader's BatchSampler in a
    ``BatchSamplerShard`` of that many processes (1222-1254), as :func:`BatchSamplerShard` above.
    Its ``process_index`` is ``PartialState``'s: the global rank, read from the process group
    (``cpu=True`` where there is no GPU, as ``accelerate launch --cpu`` makes it; without it the
    state reads no distributed job on CPU and every rank takes index 0). Without a mesh it
    shards by ``num_replicas``/``rank``, as the suite builds a sampler in a plain group.

    At one process accelerate does not wrap (1222-1223), so its last batch stays short where
    more processes complete it from the first batches; this pads it there too, as
    :func:`BatchSamplerShard` does, so that the one-rank reading is what every rank's is cut from.
    """
    data_loader = require("accelerate.data_loader", "accelerate", f"{__name__}:PreparedOnMesh")
    from accelerate.state import PartialState
    from torch.utils.data import DataLoader

    PartialState(cpu=not torch.cuda.is_available())
    loader = DataLoader(
        dataset, batch_size=batch_size, sampler=seeded_index_sampler(dataset, shuffle, seed), drop_last=drop_last
    )
    if device_mesh is None:
        num_replicas, rank = fill_from_process_group(num_replicas, rank)
    prepared = data_loader.prepare_data_loader(
        loader, num_processes=num_replicas, process_index=rank, put_on_device=False, torch_device_mesh=device_mesh
    )
    batches = prepared.batch_sampler
    if not isinstance(batches, data_loader.BatchSamplerShard):  # one process: left unwrapped
        batches = data_loader.BatchSamplerShard(batches, num_processes=1, process_index=0)
    return batches


class GeneratorShuffledIds(IterableDataset):
    """A user's IterableDataset of the ids 0 .. N-1, written as transformers'
    ``IterableDatasetShard`` docstring asks (accelerate's shard, the same code, handles the same
    case without saying so): its shuffle draws from the ``torch.Generator`` it holds in
    ``generator`` (seeded with the script's ``seed``), and it has no ``set_epoch``, so that the
    shard reseeds that generator before each iteration. Like most such datasets it knows nothing of ranks or
    DataLoader workers: the shard is what splits it across processes."""

    def __init__(self, dataset_size: int, seed: int, shuffle: bool) -> None:
        self.dataset_size = dataset_size
        self.shuffle = shuffle
        self.generator = torch.Generator().manual_seed(seed)

    def __iter__(self) -> Iterator[int]:
        if not self.shuffle:
            return iter(range(self.dataset_size))
        return iter(torch.randperm(self.dataset_size, generator=self.generator).tolist())


@needs("accelerate", "accelerate")
def IterableDatasetShard(
    dataset_size: int, *, rank: int, world_size: int, seed: int = 0, shuffle: bool = False, batch_size: int = 1
) -> Any:
    """accelerate 1.15.0's ``IterableDatasetShard`` over :class:`GeneratorShuffledIds`, contract
    ``stream_padded``.

    ``prepare_data_loader`` wraps a DataLoader's IterableDataset in it when the batches are not
    dispatched from rank 0 (``dispatch_batches=False``; by default an IterableDataset is read on
    rank 0 alone and its batches dispatched, ``data_loader.py:1113-1117``), with
    ``batch_size=dataloader.batch_size, drop_last=dataloader.drop_last, num_processes,
    process_index, split_batches`` (1236-1243). A Trainer's defaults are ``drop_last=False``
    (``dataloader_drop_last``) and ``split_batches=False``, the class's own defaults too.

    The contract: the shard cuts the stream into global batches of ``batch_size x W`` and gives
    process r the r-th slice of each; with ``drop_last=False`` it completes the last global
    batch "by using the samples from the beginning" (its docstring), so every process yields
    as many items, some repeated: ``stream_padded``. (With ``drop_last=True`` it would stop at
    the first incomplete global batch: ``stream_truncated``.) It pads to whole global batches,
    up to ``batch_size x W - 1`` repeats, where the contract allows fewer than W x workers.

    Its ``__iter__`` reseeds the dataset's generator with ``manual_seed(self.epoch)``
    (``data_loader.py:340-346``): the seed the dataset was built with never reaches the order.
    ``self.epoch`` exists only once ``set_epoch`` has been called; ``DataLoaderShard.__iter__``
    always calls it (582), a loop over the shard itself must. At ``world_size=1`` accelerate
    would not wrap the dataset (1223); this wraps anyway.
    """
    data_loader = require("accelerate.data_loader", "accelerate", f"{__name__}:IterableDatasetShard")
    return data_loader.IterableDatasetShard(
        GeneratorShuffledIds(dataset_size, seed, shuffle),
        batch_size=batch_size,
        drop_last=False,
        num_processes=world_size,
        process_index=rank,
        split_batches=False,
    )


@needs("accelerate", "accelerate")
def PreparedStreamOnMesh(
    dataset_size: int,
    *,
    rank: int,
    world_size: int,
    device_mesh: Any = None,
    seed: int = 0,
    shuffle: bool = False,
    batch_size: int = 1,
) -> Any:
    """What ``prepare_data_loader(loader, dispatch_batches=False, torch_device_mesh=device_mesh)``
    gives a rank of a meshed job for an IterableDataset: the prepared loader's dataset, an
    ``IterableDatasetShard`` of :class:`GeneratorShuffledIds`, contract ``stream_padded+mesh``.

    Given a mesh, accelerate 1.15.0 takes its process count and index from it as for a
    map-style dataset (``data_loader.py:1129-1165``, :func:`PreparedOnMesh`): the index from
    ``PartialState``'s global rank (``rank`` and ``world_size`` here, given only as the suite
    gives them to a factory that takes the mesh, are not used), the count from ``dp_replicate``
    and ``dp_shard`` alone; then shards as :func:`IterableDatasetShard` (1236-1243). Without a
    mesh it shards by ``rank`` of ``world_size``. At one process accelerate does not wrap
    (1223); this wraps, as :func:`IterableDatasetShard` does.
    """
    data_loader = require("accelerate.data_loader", "accelerate", f"{__name__}:PreparedStreamOnMesh")
    from accelerate.state import PartialState
    from torch.utils.data import DataLoader

    PartialState(cpu=not torch.cuda.is_available())
    loader = DataLoader(GeneratorShuffledIds(dataset_size, seed, shuffle), batch_size=batch_size)
    where = (
        {"torch_device_mesh": device_mesh}
        if device_mesh is not None
        else {"num_processes": world_size, "process_index": rank}
    )
    shard = data_loader.prepare_data_loader(loader, put_on_device=False, dispatch_batches=False, **where).dataset
    if not isinstance(shard, data_loader.IterableDatasetShard):  # one process: left unwrapped
        shard = data_loader.IterableDatasetShard(shard, batch_size=batch_size, num_processes=1, process_index=0)
    return shard


# DataLoader workers unpickle the shard, which imports its module: the fork server imports it once.
IterableDatasetShard.worker_modules = ("accelerate.data_loader",)  # type: ignore[attr-defined]
PreparedStreamOnMesh.worker_modules = ("accelerate.data_loader",)  # type: ignore[attr-defined]
