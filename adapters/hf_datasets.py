"""Hugging Face ``datasets`` streaming datasets, split across ranks with
``datasets.distributed.split_dataset_by_node`` (datasets 5.2.0), as its docs show.

    sampler_conformance.adapters.hf_datasets:split_by_node   contract stream_exact

``split_by_node`` builds the data with ``IterableDataset.from_generator`` and one list of
shards in ``gen_kwargs`` (how datasets' own tests lay out shards). It shuffles with a fixed
seed before the split, as the docs require ("make sure to set a fixed seed ... so the same
shuffled list of shards is used on every node"), and moves to the next epoch with the
dataset's own ``set_epoch``.
Each item is ``{"id": i}``. DataLoader workers split each rank's shards among themselves
(datasets' ``_iter_pytorch``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from . import require

ADAPTER = f"{__name__}:split_by_node"
SHUFFLE_BUFFER = 64  # small against N, so that the buffer's reach shows in the order


def _items(shards: Sequence[range]) -> Iterator[dict[str, int]]:
    for shard in shards:
        for i in shard:
            yield {"id": i}


def _split(dataset, rank: int, world_size: int, seed: int, shuffle: bool):
    split_dataset_by_node = require("datasets.distributed", "datasets", ADAPTER).split_dataset_by_node
    if shuffle:
        dataset = dataset.shuffle(seed=seed, buffer_size=SHUFFLE_BUFFER)
    return split_dataset_by_node(dataset, rank=rank, world_size=world_size)


def split_by_node(dataset_size, *, rank, world_size, seed, shuffle, shards):
    """``IterableDataset.from_generator`` over the drawn shards, split by node."""
    datasets = require("datasets", "datasets", ADAPTER)
    dataset = datasets.IterableDataset.from_generator(_items, gen_kwargs={"shards": list(shards)})
    return _split(dataset, rank, world_size, seed, shuffle)


split_by_node.worker_modules = ("datasets",)  # type: ignore[attr-defined]
