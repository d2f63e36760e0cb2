"""torchtitan (0.3.0) ``ParallelAwareDataloader``, as its trainer builds the text loader.

    sampler_conformance.adapters.torchtitan_loader:text_loader   contract data_loader

The factory registers a dataset of ``dataset_size`` documents in torchtitan's ``DATASETS``
(text_datasets.py:37, "Add your dataset here"): a map-style ``datasets.Dataset`` whose document
i is the text ``"i"``, as ``load_dataset`` returns for a local dataset such as its ``c4_test``.
It builds ``HuggingFaceTextDataLoader.Config(dataset=..., infinite=False).build(dp_world_size=W,
dp_rank=r, tokenizer=..., seq_len=2, local_batch_size=B // W)``, the call of ``Trainer.__init__``
(trainer.py:575-587, ``local_batch_size`` being ``global_batch_size // dp_degree`` without
gradient accumulation, trainer.py:415-431). ``HuggingFaceTextDataLoader`` is a
``ParallelAwareDataloader``; its ``HuggingFaceTextDataset`` shards with
``split_dataset_by_node(ds, dp_rank, dp_world_size)``.

The tokenizer encodes document i as ``[BOS, i, EOS]``: with ``seq_len=2`` each document packs
into exactly one sample, inputs ``[BOS, i]`` and labels ``[i, EOS]``, so a batch's labels' first
column is its instances' ids, which ``InstanceIds`` hands the suite. ``infinite=False``: the
trainer's default, ``infinite=True``, re-loops within one iterator and never ends an epoch.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from . import needs, require

ADAPTER = f"{__name__}:text_loader"
DATASET_NAME = "sampler_conformance_ids"
SEQUENCE_LENGTH = 2  # [BOS, id]: one sample per document
BOS = EOS = 0


class InstanceIds:
    """torchtitan's loader, each batch ``(inputs, labels)`` read as ``{"ids": labels[:, 0]}``."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for _inputs, labels in self.loader:
            yield {"ids": labels[:, 0]}


def _id_tokenizer(tokenizer_module: Any) -> Any:
    class IdTokenizer(tokenizer_module.BaseTokenizer):
        """Document ``"i"`` as the tokens ``[BOS, i, EOS]``."""

        def encode(self, text: str, add_bos: bool = True, add_eos: bool = True) -> list[int]:
            return [BOS] * add_bos + [int(text)] + [EOS] * add_eos

        def decode(self, tokens: list[int]) -> str:
            return " ".join(map(str, tokens))

        def get_vocab_size(self) -> int:
            return 2**31

    return IdTokenizer()


@needs("torchtitan", "torchtitan")
def text_loader(dataset_size, *, dp_rank, dp_world_size, global_batch_size):
    """Rank ``dp_rank``'s ``HuggingFaceTextDataLoader`` of ``dp_world_size``, as torchtitan's trainer builds it."""
    datasets = require("datasets", "datasets", ADAPTER)
    hf_datasets = require("torchtitan.hf_datasets", "torchtitan", ADAPTER)
    text_datasets = require("torchtitan.hf_datasets.text_datasets", "torchtitan", ADAPTER)
    tokenizer_module = require("torchtitan.components.tokenizer", "torchtitan", ADAPTER)
    documents = [str(i) for i in range(dataset_size)]
    text_datasets.DATASETS[DATASET_NAME] = hf_datasets.DatasetConfig(
        path=DATASET_NAME,
        loader=lambda path: datasets.Dataset.from_dict({"text": documents}),
        sample_processor=lambda sample: sample["text"],
    )
    config = text_datasets.HuggingFaceTextDataLoader.Config(dataset=DATASET_NAME, infinite=False)
    loader = config.build(
        dp_world_size=dp_world_size,
        dp_rank=dp_rank,
        tokenizer=_id_tokenizer(tokenizer_module),
        seq_len=SEQUENCE_LENGTH,
        local_batch_size=global_batch_size // dp_world_size,
    )
    return InstanceIds(loader)
