"""Hugging Face transformers (PyPI ``transformers``): ``DistributedLengthGroupedSampler``, the
length-grouped sampler of ``Trainer(group_by_length=True)`` under DDP before 4.31.0, still
shipped in ``transformers.trainer_pt_utils``.

    sampler_conformance.adapters.transformers:DistributedLengthGroupedSampler   contract torch

It is torch's ``DistributedSampler`` with another global order: a permutation seeded with
``seed + epoch``, cut into mega-batches sorted by length, the longest item first; then padded
from the head (or cut, with ``drop_last``) and dealt strided. The suite's dataset has no
lengths, so item ``i`` is given ``ITEM_LENGTH(i)``, a spread of 1 to 509 that is the same in
every process; ``batch_size`` (which sizes the mega-batches) is ``BATCH_SIZE``. It has no
``shuffle``: it always shuffles. Without ``num_replicas`` or ``rank`` it reads them from the
process group itself.
"""

from __future__ import annotations

from typing import Any

from . import needs, require

BATCH_SIZE = 4


def ITEM_LENGTH(index: int) -> int:
    return 1 + (index * 7919) % 509


@needs("transformers", "transformers")
def DistributedLengthGroupedSampler(
    dataset: Any, num_replicas: int | None = None, rank: int | None = None, seed: int = 0, drop_last: bool = False
) -> Any:
    trainer_pt_utils = require(
        "transformers.trainer_pt_utils", "transformers", f"{__name__}:DistributedLengthGroupedSampler"
    )
    return trainer_pt_utils.DistributedLengthGroupedSampler(
        BATCH_SIZE,
        num_replicas=num_replicas,
        rank=rank,
        seed=seed,
        drop_last=drop_last,
        lengths=[ITEM_LENGTH(i) for i in range(len(dataset))],
    )
