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

Its resume goes through litdata's own ``StreamingDataLoader``: its ``state_dict`` takes the
loader's counts as arguments, which torch's Stateful protocol does not pass.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import needs, require, write_once

ADAPTER = f"{__name__}:streaming_dataset"


def _write_chunks(workdir: str, shards: Sequence[range]) -> None:
    if not any(shards):  # nothing to write: litdata's merge would wait for an index no writer makes
        return
    writer_module = require("litdata.streaming.writer", "litdata", ADAPTER)
    environment = require("litdata.utilities.env", "litdata", ADAPTER)
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


@needs("litdata", "litdata")
def streaming_dataset(dataset_size, *, rank, world_size, seed, shuffle, shards, workdir):
    """A ``StreamingDataset`` over the layout's chunks, for ``rank`` of ``world_size``."""
    litdata = require("litdata", "litdata", ADAPTER)
    environment = require("litdata.utilities.env", "litdata", ADAPTER)
    write_once(workdir, "litdata", lambda: _write_chunks(workdir, shards))
    dataset = litdata.StreamingDataset(workdir, shuffle=shuffle, seed=seed)
    dataset.distributed_env = environment._DistributedEnv(world_size=world_size, global_rank=rank, num_nodes=1)
    return dataset


streaming_dataset.worker_modules = ("litdata",)  # type: ignore[attr-defined]
