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

    sampler_conformance.adapters.hf_datasets:arrow_files     contract stream_exact

``arrow_files`` streams the same layout from files: one Arrow IPC stream file per drawn
shard in the suite's workdir (the format ``Dataset.save_to_disk`` writes, an empty shard a
file of no rows), written once per layout and read with
``load_dataset("arrow", data_files=..., split="train", streaming=True)``, then shuffled and
split as above. (Parquet files are not used: datasets 5.2.0 refuses an empty one, and
sleeps 5 s at the end of every shuffled epoch of them: docs/streaming-datasets.md.)

    sampler_conformance.adapters.hf_datasets:interleaved     contract stream_mix

``interleaved`` builds each source as ``split_by_node`` builds the data, over the drawn
shards that lie in it, mixes them with ``datasets.interleave_datasets(probabilities=...,
seed=seed)`` (the weights normalised; ``stopping_strategy="first_exhausted"``, its default),
then shuffles and splits the mix as above: the order datasets' docs show, one dataset split
by node at the end.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

from . import needs, require, shards_in, write_once

ADAPTER = f"{__name__}:split_by_node"
ARROW_ADAPTER = f"{__name__}:arrow_files"
SHUFFLE_BUFFER = 64  # small against N, so that the buffer's reach shows in the order


def _items(shards: Sequence[range]) -> Iterator[dict[str, int]]:
    for shard in shards:
        for i in shard:
            yield {"id": i}


def _split(dataset, rank: int, world_size: int, seed: int, shuffle: bool, adapter: str = ADAPTER):
    split_dataset_by_node = require("datasets.distributed", "datasets", adapter).split_dataset_by_node
    if shuffle:
        dataset = dataset.shuffle(seed=seed, buffer_size=SHUFFLE_BUFFER)
    return split_dataset_by_node(dataset, rank=rank, world_size=world_size)


@needs("datasets", "datasets")
def split_by_node(dataset_size, *, rank, world_size, seed, shuffle, shards):
    """``IterableDataset.from_generator`` over the drawn shards, split by node."""
    datasets = require("datasets", "datasets", ADAPTER)
    dataset = datasets.IterableDataset.from_generator(_items, gen_kwargs={"shards": list(shards)})
    return _split(dataset, rank, world_size, seed, shuffle)


split_by_node.worker_modules = ("datasets",)  # type: ignore[attr-defined]


def _write_arrow_files(workdir: str, shards: Sequence[range]) -> list[str]:
    """The layout's Arrow stream files, written once per layout (``write_once``)."""
    paths = [os.path.join(workdir, f"shard-{k:05d}.arrow") for k in range(len(shards))]

    def write() -> None:
        pyarrow = require("pyarrow", "datasets", ARROW_ADAPTER)  # a dependency of datasets
        for path, shard in zip(paths, shards, strict=True):
            table = pyarrow.table({"id": pyarrow.array(shard, pyarrow.int64())})
            with pyarrow.OSFile(path, "wb") as sink, pyarrow.ipc.new_stream(sink, table.schema) as writer:
                writer.write_table(table)

    write_once(workdir, "arrow", write)
    return paths


@needs("datasets", "datasets")
def arrow_files(dataset_size, *, rank, world_size, seed, shuffle, shards, workdir):
    """``load_dataset("arrow", ..., streaming=True)`` over one file per drawn shard, split by node."""
    datasets = require("datasets", "datasets", ARROW_ADAPTER)
    files = _write_arrow_files(workdir, shards)
    dataset = datasets.load_dataset("arrow", data_files=files, split="train", streaming=True)
    return _split(dataset, rank, world_size, seed, shuffle, ARROW_ADAPTER)


arrow_files.worker_modules = ("datasets",)  # type: ignore[attr-defined]


INTERLEAVED_ADAPTER = f"{__name__}:interleaved"


@needs("datasets", "datasets")
def interleaved(dataset_size, *, rank, world_size, seed, shuffle, shards, sources, weights):
    """The sources interleaved by their weights, then split by node."""
    datasets = require("datasets", "datasets", INTERLEAVED_ADAPTER)
    # Typed, as a source read from files is: without features=, interleave_datasets infers them
    # from each source's first item, and raises StopIteration while building a mix with an empty source.
    features = datasets.Features({"id": datasets.Value("int64")})
    parts = [
        datasets.IterableDataset.from_generator(
            _items, gen_kwargs={"shards": [shards[k] for k in shards_in(source, shards)]}, features=features
        )
        for source in sources
    ]
    total = sum(weights)
    mix = datasets.interleave_datasets(parts, probabilities=[w / total for w in weights], seed=seed)
    return _split(mix, rank, world_size, seed, shuffle, INTERLEAVED_ADAPTER)


interleaved.worker_modules = ("datasets",)  # type: ignore[attr-defined]
