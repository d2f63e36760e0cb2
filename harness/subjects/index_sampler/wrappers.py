"""Wrappers that shard a sampler with no rank of its own, as a trainer's library does.

Many samplers know nothing of ranks (torch-geometric's ``DynamicBatchSampler``, trl's
``RepeatSampler``, sentence-transformers' batch samplers): the trainer's library shards them,
and what a job reads on rank r is the composite. ``--shard-with=NAME`` certifies that
composite: the spec names the inner sampler, built as ``Inner(dataset, shuffle=, seed=,
drop_last=, batch_size=)`` (of these, the ones it takes), and rank r reads
``NAME``'s wrapper around it, built the way the library's trainer builds it.

The wrapper travels with the spec (``INNER sharded with NAME``), so every process that
rebuilds the sampler from its spec (the rank processes) builds the same composite, and the
verdict and the certificate name both.
"""

from __future__ import annotations

import importlib
from typing import Any

from sampler_conformance.core.subject import SHARDED_WITH, SpecError, Wrapper

# The modules the wrappers come from.
ACCELERATE = "accelerate.data_loader"
LIGHTNING = "lightning_fabric.utilities.distributed"


def _accelerate(inner: Any, num_replicas: int, rank: int) -> Any:
    data_loader = importlib.import_module(ACCELERATE)
    return data_loader.BatchSamplerShard(inner, num_processes=num_replicas, process_index=rank)


def _lightning(inner: Any, num_replicas: int, rank: int) -> Any:
    distributed = importlib.import_module(LIGHTNING)
    # Trainer.fit's own arguments for a sampler that is neither a RandomSampler nor a
    # SequentialSampler (pytorch_lightning's _get_distributed_sampler): shuffle False, since
    # the DataLoader is not a shuffled one, and the seed of PL_GLOBAL_SEED, 0 when unset.
    return distributed.DistributedSamplerWrapper(inner, num_replicas=num_replicas, rank=rank, shuffle=False, seed=0)


WRAPPERS: dict[str, Wrapper] = {
    wrapper.name: wrapper
    for wrapper in (
        Wrapper(
            "accelerate",
            "accelerate's BatchSamplerShard(inner, num_processes=W, process_index=r), as "
            "accelerate.prepare_data_loader builds it by default (split_batches=False, even_batches=True): "
            "the inner batch sampler's batches dealt round-robin, whole",
            ACCELERATE,
            "accelerate",
            _accelerate,
        ),
        Wrapper(
            "lightning",
            "Lightning's DistributedSamplerWrapper(inner, num_replicas=W, rank=r, shuffle=False, seed=0), as "
            "Trainer.fit injects it around a custom sampler: the inner sampler's pass, padded from its head to a "
            "multiple of W, rank r taking positions r, r+W, ...; set_epoch passed on",
            LIGHTNING,
            "pytorch-lightning",
            _lightning,
        ),
    )
}


def split_sharded(spec: str) -> tuple[str, Wrapper | None]:
    """The inner spec and its wrapper (None: the spec names a sampler of ranks itself).
    Raises SpecError for a wrapper that is not known or whose package is not installed."""
    inner, sharded, name = spec.partition(SHARDED_WITH)
    if not sharded:
        return spec, None
    if name not in WRAPPERS:
        raise SpecError(f"--shard-with={name!r} is not a known wrapper; known: {', '.join(WRAPPERS)}")
    wrapper = WRAPPERS[name]
    try:
        importlib.import_module(wrapper.module)
    except ImportError:
        raise SpecError(
            f"--shard-with={name} needs the package {wrapper.package!r}, which is not installed: "
            f"pip install {wrapper.package}"
        ) from None
    return inner, wrapper
