"""catalyst (22.4): ``catalyst.data.sampler.DistributedSamplerWrapper``, contract ``torch``.

A DistributedSampler over the positions of another sampler's output, as Lightning's wrapper
is, built here around what a user's DataLoader holds: a seeded RandomSampler, or a
SequentialSampler. It takes no seed and no drop_last (its DistributedSampler keeps their
defaults, 0 and False): the seed reaches only the inner sampler, and the invariants of
drop_last are not applicable. Its ``__iter__`` reads a rank's positions with
``itemgetter(*positions)``, which returns a bare index, not a tuple, for one position.
"""

from __future__ import annotations

from typing import Any

from . import needs, require, seeded_index_sampler

ADAPTER = f"{__name__}:DistributedSamplerWrapper"


@needs("catalyst", "catalyst")
def DistributedSamplerWrapper(
    dataset: Any, num_replicas: int | None = None, rank: int | None = None, shuffle: bool = True, seed: int = 0
) -> Any:
    sampler = require("catalyst.data.sampler", "catalyst", ADAPTER)
    return sampler.DistributedSamplerWrapper(
        seeded_index_sampler(dataset, shuffle, seed), num_replicas=num_replicas, rank=rank, shuffle=shuffle
    )
