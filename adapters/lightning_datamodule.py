"""PyTorch Lightning (2.6.6): a ``LightningDataModule``'s train loader as the Trainer prepares it under DDP.

    sampler_conformance.adapters.lightning_datamodule:train_loader   contract data_loader

The DataModule is the one Lightning's docs write: ``train_dataloader()`` returns
``DataLoader(dataset, batch_size=B // W, shuffle=True, num_workers=..., drop_last=True)``
(``drop_last`` so that every rank reads whole batches, as the contract asks). For rank r of W the
factory builds ``Trainer(accelerator="cpu", devices=W, strategy="ddp")`` with ``LOCAL_RANK=r``
(as a launcher exports it: the Trainer then starts no process, and its
``distributed_sampler_kwargs`` are ``num_replicas=W, rank=r``) and hands the DataModule's loader to
``_process_dataloader``, the one call the fit loop makes on it (fit_loop.py ``setup_data``): it
injects ``DistributedSampler(dataset, shuffle=True, seed=PL_GLOBAL_SEED, num_replicas=W, rank=r)``
(data_connector.py ``_get_distributed_sampler``). The seed is read from ``PL_GLOBAL_SEED``, which
``seed_everything(seed)`` exports; the factory exports it for the build only, and does not seed
the global RNGs. The epoch hook is the fit loop's, ``_set_sampler_epoch(loader, epoch)``.

The injected sampler is built without ``drop_last``: it pads each epoch to a multiple of W with
instances from its start, whatever the loader's ``drop_last`` says.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sampler_conformance.subjects.common.exported import exported
from sampler_conformance.subjects.common.index_dataset import IndexDataset

from . import needs, require

ADAPTER = f"{__name__}:train_loader"
DISTRIBUTION = "pytorch-lightning"


class TrainLoader:
    """The prepared DataLoader, with the fit loop's epoch hook."""

    def __init__(self, loader: Any, set_sampler_epoch: Any) -> None:
        self.loader = loader
        self._set_sampler_epoch = set_sampler_epoch

    def set_epoch(self, epoch: int) -> None:
        self._set_sampler_epoch(self.loader, epoch)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.loader)

    def __len__(self) -> int:
        return len(self.loader)


@needs("pytorch_lightning", DISTRIBUTION)
def train_loader(dataset_size, *, dp_rank, dp_world_size, global_batch_size, seed=0, num_workers=0):
    """Rank ``dp_rank``'s train loader of ``dp_world_size``, as Lightning's fit loop prepares the DataModule's."""
    pl = require("pytorch_lightning", DISTRIBUTION, ADAPTER)
    connector = require("pytorch_lightning.trainer.connectors.data_connector", DISTRIBUTION, ADAPTER)
    states = require("pytorch_lightning.trainer.states", DISTRIBUTION, ADAPTER)
    fabric_data = require("lightning_fabric.utilities.data", DISTRIBUTION, ADAPTER)
    from torch.utils.data import DataLoader

    datamodule: Any = pl.LightningDataModule

    class IdsDataModule(datamodule):
        def train_dataloader(self) -> Any:
            return DataLoader(
                IndexDataset(dataset_size),
                batch_size=global_batch_size // dp_world_size,
                shuffle=True,
                num_workers=num_workers,
                drop_last=True,
            )

    with exported({"LOCAL_RANK": dp_rank, "PL_GLOBAL_SEED": seed}):
        trainer = pl.Trainer(
            accelerator="cpu",
            devices=dp_world_size,
            strategy="ddp",
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
        )
        loader = connector._process_dataloader(
            trainer, states.TrainerFn.FITTING, states.RunningStage.TRAINING, IdsDataModule().train_dataloader()
        )
    return TrainLoader(loader, fabric_data._set_sampler_epoch)
