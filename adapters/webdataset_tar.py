"""``webdataset`` (1.0.2) over tar shards in the suite's workdir, split across ranks with
``webdataset.split_by_node``, as its docs show for multi-node training.

    sampler_conformance.adapters.webdataset_tar:split_by_node   contract stream

The factory writes each drawn shard once per layout, as ``shard-00003.tar`` holding one
member ``00000012.id`` per item (the bytes of its id), then builds
``WebDataset(urls, nodesplitter=split_by_node, shardshuffle=..., detshuffle=True, seed=seed)``
with the library's other defaults: DataLoader workers split each rank's shards with
``split_by_worker``, and a worker that gets no samples raises (``empty_check=True``).
``split_by_node`` takes the rank from ``RANK`` and ``WORLD_SIZE`` (torchrun exports them;
so do the suite's ranks, simulated or real), not from the factory's arguments. Each item is
``{"id": i}``.

``shardshuffle`` shuffles the shards of each worker after the split (webdataset 1.0.2,
``WebDataset.__init__``: node split, worker split, then the shuffle stage), with
``detshuffle``'s own epoch counter, which lives in the worker's copy: a fresh worker
starts from the main process's copy every epoch. A ``WebDataset`` has no ``set_epoch``.

    sampler_conformance.adapters.webdataset_tar:random_mix      contract stream_mix

``random_mix`` builds one such ``WebDataset`` per source, over the drawn shards that lie in
it, and mixes them with ``RandomMix(datasets, probs=weights)`` (``longest=False``, its
default: the mix ends when a source does), as webdataset's docs show for mixing sources.
"""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Sequence

from . import needs, require, shards_in, write_once

ADAPTER = f"{__name__}:split_by_node"
MIX_ADAPTER = f"{__name__}:random_mix"


def _write_shards(workdir: str, shards: Sequence[range]) -> list[str]:
    """The layout's tar files, written once per layout (``write_once``)."""
    paths = [os.path.join(workdir, f"shard-{k:05d}.tar") for k in range(len(shards))]

    def write() -> None:
        for path, shard in zip(paths, shards, strict=True):
            with tarfile.open(path, "w") as tar:
                for i in shard:
                    data = str(i).encode()
                    member = tarfile.TarInfo(f"{i:08d}.id")
                    member.size = len(data)
                    tar.addfile(member, io.BytesIO(data))

    write_once(workdir, "webdataset", write)
    return paths


def _item(sample: dict) -> dict[str, int]:
    return {"id": int(sample["id"])}


def _split_by_node(urls: list[str], seed, shuffle, adapter: str):
    """A ``WebDataset`` over ``urls``, split by node and by worker."""
    wds = require("webdataset", "webdataset", adapter)
    dataset = wds.WebDataset(
        urls,
        nodesplitter=wds.split_by_node,
        shardshuffle=len(urls) if shuffle else False,
        detshuffle=True,
        seed=seed,
    )
    return dataset.map(_item)


@needs("webdataset", "webdataset")
def split_by_node(dataset_size, *, rank, world_size, seed, shuffle, shards, workdir):
    """A ``WebDataset`` over the layout's tar shards, split by node and by worker."""
    return _split_by_node(_write_shards(workdir, shards), seed, shuffle, ADAPTER)


split_by_node.worker_modules = ("webdataset",)  # type: ignore[attr-defined]


@needs("webdataset", "webdataset")
def random_mix(dataset_size, *, rank, world_size, seed, shuffle, shards, workdir, sources, weights):
    """``RandomMix`` by ``weights`` of one ``WebDataset`` per source."""
    wds = require("webdataset", "webdataset", MIX_ADAPTER)
    urls = _write_shards(workdir, shards)
    parts = [
        _split_by_node([urls[k] for k in shards_in(source, shards)], seed, shuffle, MIX_ADAPTER) for source in sources
    ]
    return wds.RandomMix(parts, probs=list(weights))


random_mix.worker_modules = ("webdataset",)  # type: ignore[attr-defined]
