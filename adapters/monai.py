"""MONAI (PyPI ``monai``): ``DistributedWeightedRandomSampler``, a distributed weighted
sampler, built as its docstring shows it.

    sampler_conformance.adapters.monai:DistributedWeightedRandomSampler   contract weighted_partition

It takes the rank's partition from its ``DistributedSampler`` base (shuffled, seeded with
``seed``), then draws ``num_samples_per_rank`` indices over it by the partition's weights,
with ``torch.multinomial`` on its ``generator``: None by default, so the process's global
generator.
"""

from __future__ import annotations

from typing import Any

from . import needs, require

ADAPTER = f"{__name__}:DistributedWeightedRandomSampler"


@needs("monai", "monai")
def DistributedWeightedRandomSampler(weights: Any, *, num_replicas: int, rank: int, num_samples: int, seed: int = 0):
    samplers = require("monai.data.samplers", "monai", ADAPTER)
    dataset = range(len(weights))  # DistributedSampler needs only its len()
    return samplers.DistributedWeightedRandomSampler(
        dataset, weights, num_samples_per_rank=num_samples, num_replicas=num_replicas, rank=rank, seed=seed
    )
