"""PyTorch Lightning (PyPI ``pytorch-lightning``): the samplers the Trainer injects.

- ``DistributedSamplerWrapper`` (from ``lightning_fabric``), contract ``torch``: a
  DistributedSampler over the positions of another sampler's output, used for custom
  samplers. Built here as the Trainer builds it (shuffle and seed forwarded) around what
  a user's DataLoader holds: a seeded RandomSampler, or a SequentialSampler.
- ``WeightedDistributedSamplerWrapper``, contract ``weighted``: the same wrapper around a
  ``WeightedRandomSampler`` (with replacement, on a generator seeded with the seed), as users
  give the Trainer a weighted sampler: every rank draws the same ``num_samples x W``
  indices, and the wrapper deals their positions to the ranks.
- ``UnrepeatedDistributedSampler``, contract ``partition``: the Trainer's sampler for
  prediction, documented as "doesn't repeat data, ... off-by-one" per rank.
"""

from __future__ import annotations

from typing import Any

from . import needs, require, seeded_index_sampler

DISTRIBUTION = "pytorch-lightning"


@needs("lightning_fabric", "pytorch-lightning")
def DistributedSamplerWrapper(
    dataset: Any,
    num_replicas: int | None = None,
    rank: int | None = None,
    shuffle: bool = True,
    seed: int = 0,
    drop_last: bool = False,
) -> Any:
    fabric = require(
        "lightning_fabric.utilities.distributed",
        DISTRIBUTION,
        "sampler_conformance.adapters.lightning:DistributedSamplerWrapper",
    )
    return fabric.DistributedSamplerWrapper(
        seeded_index_sampler(dataset, shuffle, seed),
        num_replicas=num_replicas,
        rank=rank,
        shuffle=shuffle,
        seed=seed,
        drop_last=drop_last,
    )


@needs("lightning_fabric", "pytorch-lightning")
def WeightedDistributedSamplerWrapper(
    weights: Any, *, num_replicas: int, rank: int, num_samples: int, seed: int = 0
) -> Any:
    import torch
    from torch.utils.data import WeightedRandomSampler

    fabric = require(
        "lightning_fabric.utilities.distributed",
        DISTRIBUTION,
        "sampler_conformance.adapters.lightning:WeightedDistributedSamplerWrapper",
    )
    generator = torch.Generator().manual_seed(seed)
    inner = WeightedRandomSampler(weights, num_samples * num_replicas, replacement=True, generator=generator)
    return fabric.DistributedSamplerWrapper(inner, num_replicas=num_replicas, rank=rank, seed=seed)


@needs("pytorch_lightning", "pytorch-lightning")
def UnrepeatedDistributedSampler(
    dataset: Any,
    num_replicas: int | None = None,
    rank: int | None = None,
    shuffle: bool = True,
    seed: int = 0,
    drop_last: bool = False,
) -> Any:
    overrides = require(
        "pytorch_lightning.overrides.distributed",
        DISTRIBUTION,
        "sampler_conformance.adapters.lightning:UnrepeatedDistributedSampler",
    )
    return overrides.UnrepeatedDistributedSampler(
        dataset, num_replicas=num_replicas, rank=rank, shuffle=shuffle, seed=seed, drop_last=drop_last
    )
