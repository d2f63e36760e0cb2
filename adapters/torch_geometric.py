"""PyTorch Geometric (PyPI ``torch_geometric``): ``DynamicBatchSampler``, contract
``dynamic_batches``.

    sampler_conformance.adapters.torch_geometric:DynamicBatchSampler   contract dynamic_batches

``torch_geometric.loader.DynamicBatchSampler(dataset, max_num=max_tokens, mode="node",
shuffle=True)`` (2.8.0) packs graphs into a batch until the next one would take the batch's
node count past ``max_num``; a graph larger than ``max_num`` goes alone (the default
``skip_too_big=False``). Of each item it reads ``len(dataset)`` and ``dataset[i].num_nodes``
(``dynamic_batch_sampler.py``), so the dataset is the smallest it accepts: a list of
``Data(num_nodes=length)``, one graph of ``lengths[i]`` nodes and no features per item, which
``torch_geometric.loader.DataLoader`` also takes.

It takes no rank and no world size: every process plans the same batches of the whole
dataset, so ``num_replicas`` and ``rank`` reach nothing (under DDP each rank trains on every
item). Without ``num_steps`` its ``__len__`` raises ``ValueError``, as its docstring says.

It has no seed and no ``set_epoch``: each ``__iter__`` shuffles with ``torch.randperm`` from
the process's global generator. A training script seeds that once, at its start, with
``torch_geometric.seed_everything(seed)``; the factory does the same just before it builds the
sampler, so a sampler built with the same seed plans the same passes, and each pass draws anew.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import needs, require

ADAPTER = f"{__name__}:DynamicBatchSampler"


@needs("torch_geometric", "torch_geometric")
def DynamicBatchSampler(lengths: Sequence[int], *, num_replicas: int, rank: int, max_tokens: int, seed: int = 0) -> Any:
    torch_geometric = require("torch_geometric", "torch_geometric", ADAPTER)
    loader = require("torch_geometric.loader", "torch_geometric", ADAPTER)
    data = require("torch_geometric.data", "torch_geometric", ADAPTER)
    dataset = [data.Data(num_nodes=length) for length in lengths]
    torch_geometric.seed_everything(seed)  # as a script does at its start: the sampler has no seed of its own
    return loader.DynamicBatchSampler(dataset, max_num=max_tokens, mode="node", shuffle=True)
