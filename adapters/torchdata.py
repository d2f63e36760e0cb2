"""torchdata (PyPI ``torchdata``).

- ``StatefulDistributedSampler``, contract ``torch``. It subclasses DistributedSampler and
  only adds ``state_dict``/``load_state_dict`` for resuming mid-epoch, so it promises
  DistributedSampler's contract unchanged.
- ``torchdata.nodes.MultiNodeWeightedSampler``, contract ``weighted``: the weighted mixing of
  several sources, one source per item here (see :func:`MultiNodeWeightedSampler`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
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


class _Passes:
    """A torchdata node read as a sampler: each ``iter()`` is one pass of ``num_samples``
    draws, started by the node's ``reset()``, as ``torchdata.nodes.Loader`` starts each of
    its passes."""

    def __init__(self, node: Any, num_samples: int) -> None:
        self.node = node
        self.num_samples = num_samples

    def __iter__(self) -> Iterator[int]:
        self.node.reset()
        return itertools.islice(self.node, self.num_samples)

    def __len__(self) -> int:
        return self.num_samples


@needs("torchdata", "torchdata")
def MultiNodeWeightedSampler(
    weights: Sequence[float], *, num_replicas: int, rank: int, num_samples: int, seed: int = 0
) -> _Passes:
    """``torchdata.nodes.MultiNodeWeightedSampler`` (torchdata 0.11.0,
    ``nodes/samplers/multi_node_weighted_sampler.py``) mixing one source per item: source
    ``i`` yields ``i`` forever, so each draw names the item drawn.

    - It picks each draw's source with ``torch.multinomial`` over the weights, from a
      generator seeded by ``seed * world_size + rank`` and its epoch (``samplers/utils.py``,
      ``_get_rank_seed``).
    - It refuses a weight that is not a float above 0 (lines 106-113): items of weight 0 are left
      out, as a user mixing sources leaves out an empty one.
    - ``StopCriteria.CYCLE_FOREVER`` never stops; a pass is ``num_samples`` draws.
    - It has no ``set_epoch``: ``reset()`` advances its epoch when the pass before drew
      (lines 128-135). So its passes differ, and pass k is the same for the same arguments.
    """
    nodes = require("torchdata.nodes", "torchdata", f"{__name__}:MultiNodeWeightedSampler")
    kept = [item for item, weight in enumerate(weights) if weight > 0]
    mixer = nodes.MultiNodeWeightedSampler(
        {str(item): nodes.IterableWrapper(itertools.repeat(item)) for item in kept},
        {str(item): float(weights[item]) for item in kept},
        stop_criteria=nodes.StopCriteria.CYCLE_FOREVER,
        rank=rank,
        world_size=num_replicas,
        seed=seed,
    )
    return _Passes(mixer, num_samples)
