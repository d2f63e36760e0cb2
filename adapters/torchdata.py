"""torchdata (PyPI ``torchdata``): StatefulDistributedSampler, contract ``torch``.

It subclasses DistributedSampler and only adds ``state_dict``/``load_state_dict`` for
resuming mid-epoch, so it promises DistributedSampler's contract unchanged.
"""

from __future__ import annotations

from typing import Any

from . import needs, require


@needs("torchdata", "torchdata")
def StatefulDistributedSampler(
    dataset: Any,
    num_replicas: int | None = None,
    rank: int | None = None,
    shuffle: bool = True,
    seed: int = 0,
    drop_last: bool = False,
) -> Any:
    sampler_module = require(
        "torchdata.stateful_dataloader.sampler",
        "torchdata",
        "sampler_conformance.adapters.torchdata:StatefulDistributedSampler",
    )
    return sampler_module.StatefulDistributedSampler(
        dataset, num_replicas=num_replicas, rank=rank, shuffle=shuffle, seed=seed, drop_last=drop_last
    )
