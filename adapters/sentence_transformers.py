"""sentence-transformers (PyPI ``sentence-transformers``): ``GroupByLabelBatchSampler`` as its
trainer reads it, contract ``labels``, and ``NoDuplicatesBatchSampler``, contract ``batch``.

    sampler_conformance.adapters.sentence_transformers:GroupByLabelBatchSampler   contract labels
    sampler_conformance.adapters.sentence_transformers:NoDuplicatesBatchSampler   contract batch

``SentenceTransformerTrainer`` (sentence-transformers 6.2.0, ``base/trainer.py``,
``_build_dataloader`` and ``get_batch_sampler``) builds ``GroupByLabelBatchSampler(dataset,
batch_size=, drop_last=, valid_label_columns=, generator=, seed=args.seed)`` over a
``datasets.Dataset`` with a label column, on a generator seeded with ``args.seed``, as the
batch sampler of a DataLoader that accelerate's ``prepare`` shards with ``BatchSamplerShard``
(its defaults: whole batches dealt round-robin, the last round completed from the first
batches). Of the dataset the sampler reads only ``column_names`` and the label column
(``dataset["label"]``); :class:`LabelColumn` gives it those, the suite's labels, without the
Arrow table, whose column takes 80 ms to read back at 10,000 items on each of up to 64
ranks a case builds. Each epoch the
trainer calls ``set_epoch`` on the loader, which does not reach a batch sampler inside
``BatchSamplerShard``, then on that batch sampler itself (transformers 5.24,
``Trainer._inner_training_loop``): :class:`TrainerBatches` passes ``set_epoch`` on the same
way. The sampler always shuffles; it takes no ``shuffle``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import torch

from . import fill_from_process_group, needs, require


class LabelColumn:
    """A table of one column, ``label``, as much of a ``datasets.Dataset`` as the sampler reads."""

    column_names = ["label"]

    def __init__(self, labels: Sequence[int]) -> None:
        self.labels = list(labels)

    def __getitem__(self, column: str) -> list[int]:
        if column != "label":
            raise KeyError(column)
        return self.labels

    def __len__(self) -> int:
        return len(self.labels)


class TrainerBatches:
    """A sharded batch sampler read as the trainer reads it: ``set_epoch`` reaches the batch
    sampler inside the shard."""

    def __init__(self, shard: Any) -> None:
        self.shard = shard

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self.shard)

    def __len__(self) -> int:
        return len(self.shard)

    def set_epoch(self, epoch: int) -> None:
        self.shard.batch_sampler.set_epoch(epoch)


@needs("sentence_transformers", "sentence-transformers")
@needs("accelerate", "accelerate")
def GroupByLabelBatchSampler(
    dataset: Any,
    num_replicas: int | None = None,
    rank: int | None = None,
    seed: int = 0,
    drop_last: bool = False,
    batch_size: int = 4,
    labels: Sequence[int] = (),
) -> TrainerBatches:
    return _as_the_trainer_builds(
        "GroupByLabelBatchSampler", LabelColumn(labels), num_replicas, rank, seed, drop_last, batch_size
    )


def _as_the_trainer_builds(
    name: str, table: Any, num_replicas: int | None, rank: int | None, seed: int, drop_last: bool, batch_size: int
) -> TrainerBatches:
    """sentence-transformers' batch sampler ``name`` over ``table``, as ``SentenceTransformerTrainer``
    builds it (a generator seeded with ``args.seed``), sharded by accelerate's ``BatchSamplerShard``."""
    spec = f"{__name__}:{name}"
    samplers = require("sentence_transformers.base.sampler", "sentence-transformers", spec)
    data_loader = require("accelerate.data_loader", "accelerate", spec)
    num_processes, process_index = fill_from_process_group(num_replicas, rank)
    generator = torch.Generator()
    generator.manual_seed(seed)  # the trainer's, seeded with args.seed
    sampler = getattr(samplers, name)(
        table,
        batch_size=batch_size,
        drop_last=drop_last,
        valid_label_columns=["label"],
        generator=generator,
        seed=seed,
    )
    return TrainerBatches(
        data_loader.BatchSamplerShard(sampler, num_processes=num_processes, process_index=process_index)
    )


class TextPairs:
    """A table of two text columns, ``anchor`` and ``positive``, every value distinct (a pair
    dataset for MultipleNegativesRankingLoss without repeats): as much of a ``datasets.Dataset``
    as ``NoDuplicatesBatchSampler`` reads, each row built when it is read."""

    column_names = ["anchor", "positive"]

    def __init__(self, size: int) -> None:
        self.size = size

    def __getitem__(self, index: int) -> dict[str, str]:
        return {"anchor": f"question {index}", "positive": f"answer {index}"}

    def __len__(self) -> int:
        return self.size


@needs("sentence_transformers", "sentence-transformers")
@needs("accelerate", "accelerate")
def NoDuplicatesBatchSampler(
    dataset: Any,
    num_replicas: int | None = None,
    rank: int | None = None,
    seed: int = 0,
    drop_last: bool = False,
    batch_size: int = 4,
) -> TrainerBatches:
    """``NoDuplicatesBatchSampler`` as ``SentenceTransformerTrainer`` builds it (the batch sampler
    of ``BatchSamplers.NO_DUPLICATES``), over distinct text pairs, sharded by accelerate as the
    trainer's loader is: with no value repeated it never defers an item, so what is certified
    is its shuffle, its epochs and the sharding. (A short batch before the last, which it
    yields where a value repeats, is the known-bad ``ShortBatchMidEpoch``: selftests/corpus/unsharded.py.)"""
    return _as_the_trainer_builds(
        "NoDuplicatesBatchSampler", TextPairs(len(dataset)), num_replicas, rank, seed, drop_last, batch_size
    )
