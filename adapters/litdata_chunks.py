"""``litdata`` (0.2.76) ``StreamingDataset`` over an optimized local directory in the suite's
workdir, as its docs show for training on local data.

    sampler_conformance.adapters.litdata_chunks:streaming_dataset   contract stream

The factory writes the layout once, with litdata's own ``BinaryWriter`` as a single writer:
one chunk per non-empty drawn shard (litdata has no empty chunks), each item ``{"id": i}``,
and the ``index.json`` that ``litdata.optimize`` leaves. It then builds
``StreamingDataset(workdir, shuffle=shuffle, seed=seed)`` with the library's other defaults
and tells it its rank: litdata takes the rank from ``torch.distributed`` when a process
group is up, else from ``GLOBAL_RANK`` and ``WORLD_SIZE``, so the factory sets its
``distributed_env`` as litdata's own tests do. DataLoader workers split each rank's
part among themselves (``_WorkerEnv.detect``). An empty dataset has no chunk, so no index
to open.

    sampler_conformance.adapters.litdata_chunks:combined   contract stream_mix

``combined`` writes each source's shards the same way, to a folder of its own, and mixes one
``StreamingDataset`` per source with ``CombinedStreamingDataset(datasets, seed=seed,
weights=weights, iterate_over_all=False)``, as its docs show for a mix by weights (weights
are refused unless ``iterate_over_all=False``, which stops at the first source exhausted).

Its resume goes through litdata's own ``StreamingDataLoader``: its ``state_dict`` takes the
loader's counts as arguments, which torch's Stateful protocol does not pass.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from . import needs, require, shards_in, write_once

ADAPTER = f"{__name__}:streaming_dataset"
MIX_ADAPTER = f"{__name__}:combined"


def _write_chunks(workdir: str, shards: Sequence[range], adapter: str = ADAPTER) -> None:
    if not any(shards):  # nothing to write: litdata's merge would wait for an index no writer makes
        return
    writer_module = require("litdata.streaming.writer", "litdata", adapter)
    environment = require("litdata.utilities.env", "litdata", adapter)
    writer = writer_module.BinaryWriter(workdir, chunk_size=sum(map(len, shards)) + 1)
    # One writer for the layout, whichever rank took the lock: left to detect the job's ranks, it
    # would name its index after its rank and wait for one index per rank before merging them.
    writer._distributed_env = environment._DistributedEnv(world_size=1, global_rank=0, num_nodes=1)
    for shard in shards:
        for i in shard:
            writer.add_item(i, {"id": i})
        if len(shard):
            writer.write_chunk(on_done=True)  # the shard's items as one chunk
    writer.done()
    writer.merge()


def _streaming_dataset(folder: str, shards: Sequence[range], rank, world_size, seed, shuffle, adapter: str):
    """A ``StreamingDataset`` over ``shards`` written to ``folder`` once, for ``rank`` of ``world_size``."""
    litdata = require("litdata", "litdata", adapter)
    environment = require("litdata.utilities.env", "litdata", adapter)
    write_once(folder, "litdata", lambda: _write_chunks(folder, shards, adapter))
    dataset = litdata.StreamingDataset(folder, shuffle=shuffle, seed=seed)
    dataset.distributed_env = environment._DistributedEnv(world_size=world_size, global_rank=rank, num_nodes=1)
    return dataset


@needs("litdata", "litdata")
def streaming_dataset(dataset_size, *, rank, world_size, seed, shuffle, shards, workdir):
    """A ``StreamingDataset`` over the layout's chunks, for ``rank`` of ``world_size``."""
    return _streaming_dataset(workdir, shards, rank, world_size, seed, shuffle, ADAPTER)


streaming_dataset.worker_modules = ("litdata",)  # type: ignore[attr-defined]


@needs("litdata", "litdata")
def combined(dataset_size, *, rank, world_size, seed, shuffle, shards, workdir, sources, weights):
    """``CombinedStreamingDataset`` by ``weights`` over one ``StreamingDataset`` per source."""
    litdata = require("litdata", "litdata", MIX_ADAPTER)
    # The workdir is the shards' layout: the sources cut it one way of several.
    mix = os.path.join(workdir, "mix-" + "-".join(str(len(source)) for source in sources))
    parts = []
    for number, source in enumerate(sources):
        folder = os.path.join(mix, f"source-{number}")
        os.makedirs(folder, exist_ok=True)
        in_source = [shards[k] for k in shards_in(source, shards)]
        parts.append(_streaming_dataset(folder, in_source, rank, world_size, seed, shuffle, MIX_ADAPTER))
    return litdata.CombinedStreamingDataset(parts, seed=seed, weights=list(weights), iterate_over_all=False)


combined.worker_modules = ("litdata",)  # type: ignore[attr-defined]
