"""opacus (PyPI ``opacus``): ``DistributedUniformWithReplacementSampler``, the Poisson batch
sampler of differentially private training under DDP.

    sampler_conformance.adapters.opacus:DistributedUniformWithReplacementSampler   contract poisson

It takes its rank and world size from ``torch.distributed.get_rank()`` and
``get_world_size()``, in its constructor only, and has no argument for them: the factory tells
them as a process group would (those two functions answer ``rank`` and ``num_replicas`` while
the constructor runs), and leaves every other line of it as it is. It is built as opacus'
``DPDataLoader`` builds it, with ``generator=None`` (the process's global generator draws the
steps), and with ``shuffle_seed=seed`` (``DPDataLoader`` leaves it 0). Its batches are
tensors of indices, which a DataLoader takes as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from unittest import mock

from . import needs, require

ADAPTER = f"{__name__}:DistributedUniformWithReplacementSampler"


@needs("opacus", "opacus")
def DistributedUniformWithReplacementSampler(
    lengths: Sequence[int], *, num_replicas: int, rank: int, sample_rate: float, seed: int = 0
):
    uniform_sampler = require("opacus.utils.uniform_sampler", "opacus", ADAPTER)
    distributed = uniform_sampler.torch.distributed
    with (
        mock.patch.object(distributed, "get_world_size", return_value=num_replicas),
        mock.patch.object(distributed, "get_rank", return_value=rank),
    ):
        return uniform_sampler.DistributedUniformWithReplacementSampler(
            total_size=len(lengths), sample_rate=sample_rate, shuffle=True, shuffle_seed=seed
        )
