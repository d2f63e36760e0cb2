"""``mosaicml-streaming`` (0.13.0) ``StreamingDataset`` over MDS shards in the suite's
workdir, read locally (``local=`` a folder of it, no remote), as its docs show for local data.

    sampler_conformance.adapters.mosaic_streaming:streaming_dataset   contract stream_padded

The factory writes the layout once with the library's own ``MDSWriter``: one ``.mds`` shard
per non-empty drawn shard (``flush_shard`` between them; an MDS shard is never empty), each
item ``{"id": i}``, and the ``index.json`` the writer leaves. It then builds
``StreamingDataset(local=..., shuffle=shuffle, shuffle_seed=seed, batch_size=batch_size)``
with the library's other defaults: ``batch_size`` is the DataLoader's, which the library
requires ("the same as what is passed to the DataLoader").

The library takes the rank from ``RANK``, ``WORLD_SIZE`` and ``LOCAL_WORLD_SIZE``, not from
the factory's arguments, and coordinates the ranks and DataLoader workers of a node through
shared memory and barriers: a barrier of the node's workers would wait forever in the
suite's in-process simulation, which reads one worker after another, so it is judged in real
process groups only (``needs_process_group``). Its epoch is its own count of iterations,
kept in the node's shared memory; it has no ``set_epoch``.

Its resume goes through the library's own ``StreamingDataLoader``:
``StreamingDataset.state_dict(num_samples, from_beginning)`` takes arguments that torch's
Stateful protocol does not pass.

``import streaming`` imports ``torchvision``; PyPI's torchvision wheels do not import beside
torch 2.13.0's CPU build (docs/streaming-datasets.md says where it was certified).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from . import needs, require, write_once

ADAPTER = f"{__name__}:streaming_dataset"


def _write_shards(folder: str, shards: Sequence[range]) -> None:
    streaming = require("streaming", "mosaicml-streaming", ADAPTER)
    with streaming.MDSWriter(out=folder, columns={"id": "int"}, size_limit=None) as writer:
        for shard in shards:
            for i in shard:
                writer.write({"id": i})
            if len(shard):  # the shard's items as one .mds file
                writer.flush_shard()
                writer._reset_cache()


@needs("streaming", "mosaicml-streaming")
def streaming_dataset(dataset_size, *, rank, world_size, seed, shuffle, shards, batch_size, workdir):
    """A ``StreamingDataset`` over the layout's MDS shards; the rank comes from the environment."""
    streaming = require("streaming", "mosaicml-streaming", ADAPTER)
    folder = os.path.join(workdir, "mds")  # MDSWriter refuses a folder that holds anything (the lock)
    write_once(workdir, "mosaic", lambda: _write_shards(folder, shards))
    return streaming.StreamingDataset(local=folder, shuffle=shuffle, shuffle_seed=seed, batch_size=batch_size)


streaming_dataset.needs_process_group = True  # type: ignore[attr-defined]
streaming_dataset.worker_modules = ("streaming",)  # type: ignore[attr-defined]
