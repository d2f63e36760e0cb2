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
- ``ModelParallelDistributedSampler``, contract ``torch`` (``+mesh``): the DistributedSampler
  the Trainer injects under ``ModelParallelStrategy`` (FSDP2 x TP), its ``num_replicas``/``rank``
  the strategy's ``distributed_sampler_kwargs``: the size and local rank of the mesh dimension
  named ``data_parallel`` (pytorch_lightning/strategies/model_parallel.py:116-121 of 2.6.6). The
  strategy builds its own mesh, always ``("data_parallel", "tensor_parallel")``, data outermost
  (lightning_fabric/strategies/model_parallel.py:505-523). Given a mesh that has a
  ``data_parallel`` dimension, the strategy's property reads it as it is. Given one of the
  suite's (``dp2.tp2``: dimensions ``dp*`` and ``tp`` only), the strategy's own
  ``_setup_device_mesh(dp, tp, ...)`` builds Lightning's mesh for that job (once per mesh and
  process: a collective every rank joins, as the suite's first call on a mesh is), after
  checking that the suite lays its ranks as Lightning does; a mesh Lightning cannot build
  (``tp2.dp2``, or a ``cp``/``pp`` dimension) raises ValueError, since no Lightning job has it:
  certify it with ``--meshes=data_parallel2.tensor_parallel2 --data-dims=data_parallel`` (its own
  names) or ``--meshes=dp2.tp2`` (docs/meshes.md).
"""

from __future__ import annotations

import math
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


MODEL_PARALLEL = "sampler_conformance.adapters.lightning:ModelParallelDistributedSampler"
# Per process: the suite's DeviceMesh (kept, so that its id is not reused) -> Lightning's mesh.
_LIGHTNING_MESHES: dict[int, tuple[Any, Any]] = {}


def _lightning_mesh(device_mesh: Any) -> Any:
    """The mesh ModelParallelStrategy would build for a job laid out as ``device_mesh``."""
    import torch
    import torch.distributed as dist

    names = tuple(device_mesh.mesh_dim_names or ())
    if "data_parallel" in names:  # Lightning's own names: the strategy reads it as it is
        return device_mesh
    if id(device_mesh) in _LIGHTNING_MESHES:
        return _LIGHTNING_MESHES[id(device_mesh)][1]
    data = [k for k, name in enumerate(names) if name.startswith("dp")]
    tensor = [k for k, name in enumerate(names) if name == "tp"]
    others = [names[k] for k in range(len(names)) if k not in data and k not in tensor]
    grid = device_mesh.mesh
    dp = math.prod(grid.shape[k] for k in data)
    tp = math.prod(grid.shape[k] for k in tensor)
    laid = grid.permute(*data, *tensor).reshape(dp, tp) if not others else torch.empty(0)
    if others or not torch.equal(laid, torch.arange(dp * tp).reshape(dp, tp)):
        raise ValueError(
            f"ModelParallelStrategy lays its ranks on (data_parallel, tensor_parallel), data outermost "
            f"(lightning_fabric.strategies.model_parallel._setup_device_mesh); the mesh {names} of shape "
            f"{tuple(grid.shape)} is not one a Lightning job has: certify with --meshes=dp2.tp2"
        )
    fabric = require("lightning_fabric.strategies.model_parallel", DISTRIBUTION, MODEL_PARALLEL)
    mesh = fabric._setup_device_mesh(dp, tp, dist.get_world_size(), torch.device(device_mesh.device_type))
    if not torch.equal(mesh.mesh, laid):  # Lightning's layout, as built, is the suite's
        raise ValueError(f"Lightning built {mesh.mesh.tolist()} where the mesh {names} lays {laid.tolist()}")
    _LIGHTNING_MESHES[id(device_mesh)] = (device_mesh, mesh)
    return mesh


@needs("pytorch_lightning", "pytorch-lightning")
def ModelParallelDistributedSampler(
    dataset: Any,
    num_replicas: int | None = None,
    rank: int | None = None,
    device_mesh: Any = None,
    shuffle: bool = True,
    seed: int = 0,
    drop_last: bool = False,
) -> Any:
    strategies = require("pytorch_lightning.strategies", DISTRIBUTION, MODEL_PARALLEL)
    connector = require("pytorch_lightning.trainer.connectors.data_connector", DISTRIBUTION, MODEL_PARALLEL)
    from torch.utils.data import DataLoader

    if device_mesh is not None:
        strategy = strategies.ModelParallelStrategy()
        strategy._device_mesh = _lightning_mesh(device_mesh)  # what setup_environment() sets
        kwargs = strategy.distributed_sampler_kwargs
    else:
        kwargs = {"num_replicas": num_replicas, "rank": rank}
    # The Trainer's own injection (_get_distributed_sampler, with the user's loader's sampler);
    # drop_last is forwarded as the suite asks (the Trainer itself leaves it at False).
    loader = DataLoader(dataset, sampler=seeded_index_sampler(dataset, shuffle, seed))
    return connector._get_distributed_sampler(
        loader, shuffle, overfit_batches=0, seed=seed, drop_last=drop_last, **kwargs
    )
