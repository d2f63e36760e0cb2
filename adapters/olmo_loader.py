"""ai2-olmo-core (3.0.0) ``NumpyFSLDataLoader`` over a token file the factory writes, driven as
olmo-core's ``Trainer`` drives it.

    sampler_conformance.adapters.olmo_loader:numpy_fsl   contract data_loader+elastic+resumable

The factory writes ``dataset_size`` instances of ``SEQUENCE_LENGTH`` uint16 tokens to a raw
token file in the rank's ``workdir`` (the layout olmo-core memory-maps), builds a
``NumpyFSLDataset`` over it and wraps it with ``NumpyDataLoaderBase.wrap_numpy_dataset``, with
the arguments ``NumpyDataLoaderConfig.build`` passes (olmo_core/data/data_loader.py:1121-1167),
the DP rank and size given rather than read from a process group. olmo-core counts the global
batch in tokens: ``global_batch_size`` instances are ``global_batch_size * SEQUENCE_LENGTH``
tokens. Each batch carries the instances' ``"index"`` (``_get_dataset_item``, collated by
``DataCollator``).

olmo-core's loaders need ``reshuffle(epoch)`` before an epoch and ``reset()`` after it
(``DataLoaderBase``'s docstring, data_loader.py:58-73), and count epochs from 1
(``reshuffle`` refuses 0): ``TrainerDriven`` makes those calls where ``Trainer._fit_epoch``
makes them (olmo_core/train/trainer.py:1681 and 1759), the suite's epoch e being olmo-core's
e + 1 and the first epoch, read without the hook, olmo-core's epoch 1, as the trainer starts.
Its ``state_dict()`` and ``load_state_dict()`` are the loader's own, which the trainer
checkpoints: under ``data_loader+elastic+resumable`` they hold the three resume invariants
(docs/data-loaders.md), and the verdict is the one of ``+elastic``, ``loader_runs`` failed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from . import needs, require

ADAPTER = f"{__name__}:numpy_fsl"
SEQUENCE_LENGTH = 4  # tokens per instance; any fixed length would do
VOCAB_SIZE = 1024
PAD_TOKEN_ID = 0
TOKEN_FILE = "tokens.npy"  # olmo-core's own naming; the file is raw tokens, no .npy header


class TrainerDriven:
    """An olmo-core data loader with the calls ``Trainer._fit_epoch`` makes around each epoch."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader
        loader.reshuffle(epoch=1)

    def reshuffle(self, epoch: int) -> None:
        self.loader.reshuffle(epoch=epoch + 1)  # olmo-core's epochs are 1-based

    def __iter__(self) -> Iterator[Any]:
        yield from self.loader
        self.loader.reset()

    def state_dict(self) -> dict[str, Any]:
        return self.loader.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.loader.load_state_dict(state)


def _write_tokens(path: str, dataset_size: int) -> None:
    import numpy as np

    tokens = np.arange(1, dataset_size * SEQUENCE_LENGTH + 1, dtype=np.int64) % (VOCAB_SIZE - 1) + 1
    tokens.astype(np.uint16).tofile(path)


@needs("olmo_core", "ai2-olmo-core")
def numpy_fsl(dataset_size, *, dp_rank, dp_world_size, global_batch_size, seed, num_workers, workdir):
    """Rank ``dp_rank``'s ``NumpyFSLDataLoader`` of ``dp_world_size``, as the trainer drives it."""
    import numpy as np

    data = require("olmo_core.data", "ai2-olmo-core", ADAPTER)
    path = os.path.join(workdir, TOKEN_FILE)
    _write_tokens(path, dataset_size)
    dataset = data.NumpyFSLDataset(
        path,
        sequence_length=SEQUENCE_LENGTH,
        pad_token_id=PAD_TOKEN_ID,
        eos_token_id=PAD_TOKEN_ID,
        vocab_size=VOCAB_SIZE,
        dtype=np.uint16,
    )
    dataset.work_dir = workdir
    dataset.prepare()
    loader = data.NumpyDataLoaderBase.wrap_numpy_dataset(
        dataset,
        global_batch_size=global_batch_size * SEQUENCE_LENGTH,
        collator=data.DataCollator(pad_token_id=PAD_TOKEN_ID, vocab_size=VOCAB_SIZE),
        work_dir=workdir,
        dp_world_size=dp_world_size,
        dp_rank=dp_rank,
        fs_local_rank=0,  # each rank's workdir is its own: each writes its global indices file
        seed=seed,
        num_workers=num_workers,
        target_device_type="cpu",
    )
    return TrainerDriven(loader)


# What its loader workers unpickle: imported once in each rank's fork server, not in every worker.
numpy_fsl.worker_modules = ("olmo_core.data",)  # type: ignore[attr-defined]
