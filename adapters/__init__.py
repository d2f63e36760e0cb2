"""Adapters: real samplers called the way the suite calls a sampler.

Each factory takes ``(dataset, num_replicas=W, rank=r, shuffle=, seed=, drop_last=)``
(and ``batch_size=`` for batch samplers), builds the real sampler from its package and
returns it untouched, so ``--sampler=sampler_conformance.adapters.MODULE:FACTORY`` certifies the package's
own code. The third-party package is imported inside each factory: this package imports
without any of them, and a missing one raises :class:`SamplerPackageMissing` naming
what to ``pip install``.

Weighted samplers are built by factories ``make(weights, *, num_replicas, rank, num_samples, seed)``
(docs/weighted-samplers.md); batch samplers that form their own batches by ``make(lengths, *,
num_replicas, rank, max_tokens or batch_size or sample_rate, seed)`` (docs/batch-samplers.md);
streaming datasets by ``make(dataset_size, *, rank, world_size, ...)`` (docs/streaming-datasets.md).

Which real sampler each factory adapts, and the contract it claims, is declared once, in
``catalogue.py`` (``python -m sampler_conformance.adapters.catalogue`` prints them; every
factory that declares its package with :func:`needs` is listed there, which
``selftests/test_adapters.py`` checks). The references each contract is proven against
(``torch_weighted``, ``budget_batches``, ``torch_iterable``, ``torch_batches``) are named by
``--list-contracts``.
"""

from __future__ import annotations

import fcntl
import functools
import importlib
import importlib.util
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from sampler_conformance.subjects.specs import PACKAGE_ATTRIBUTE

F = TypeVar("F", bound=Callable[..., Any])


class SamplerPackageMissing(ImportError):
    """The package an adapter wraps is not installed in this environment."""


def require(module: str, distribution: str, adapter: str) -> ModuleType:
    """Import ``module`` from the PyPI distribution ``distribution``, or say what to install."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise SamplerPackageMissing(
            f"{adapter} adapts a sampler from the PyPI package {distribution!r}, and importing "
            f"{module!r} failed ({exc}). Install it next to torch: pip install {distribution}"
        ) from exc


@functools.cache
def package_file(package: str, relative: str, distribution: str) -> ModuleType:
    """The module of one file of an installed package, loaded without the package's
    ``__init__`` (which, in some, imports a whole trainer), or what to install."""
    found = importlib.util.find_spec(package)
    if found is None or not found.submodule_search_locations:
        raise SamplerPackageMissing(
            f"this adapter loads {relative} of the PyPI package {distribution!r}, which is not installed. "
            f"Install it next to torch: pip install --no-deps {distribution}"
        )
    path = Path(next(iter(found.submodule_search_locations))) / relative
    spec = importlib.util.spec_from_file_location(f"{package}_{Path(relative).stem}", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def needs(module: str, distribution: str) -> Callable[[F], F]:
    """Declare that a factory adapts a sampler from the PyPI package ``distribution``, which
    provides ``module``: loading its spec checks that it is installed, so that a missing
    package stops the run with what to install, before any test, and is never charged to
    the sampler (``harness.subjects.specs``). A factory that needs several packages takes one
    ``@needs`` for each, checked in the order they are written."""

    def mark(factory: F) -> F:
        # Decorators apply from the bottom up: put this one ahead of those below it.
        setattr(factory, PACKAGE_ATTRIBUTE, ((module, distribution), *getattr(factory, PACKAGE_ATTRIBUTE, ())))
        return factory

    return mark


def write_once(workdir: str, name: str, write: Callable[[], None]) -> None:
    """Run ``write`` once per layout's workdir: the first rank process to take the lock
    writes and leaves a mark named ``name``; the others wait for it, then find the files."""
    with open(os.path.join(workdir, f"{name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        mark = os.path.join(workdir, f"{name}.done")
        if not os.path.exists(mark):
            write()
            open(mark, "w").close()


def shards_in(source: range, shards: Sequence[range]) -> list[int]:
    """The positions of the drawn shards that lie in a mix's ``source`` (an empty shard where
    two sources meet lies in the second; an empty source holds its own empty shard)."""
    return [k for k, s in enumerate(shards) if s.start in source or (not source and not s and s.start == source.start)]


def seeded_index_sampler(dataset: Any, shuffle: bool, seed: int) -> Any:
    """What a user's DataLoader holds before a framework shards it: a RandomSampler on a
    generator seeded with ``seed`` (the same draws on every rank), or a SequentialSampler."""
    import torch
    from torch.utils.data import RandomSampler, SequentialSampler

    # RandomSampler refuses an empty dataset; its order would be empty either way.
    if not shuffle or len(dataset) == 0:
        return SequentialSampler(dataset)
    generator = torch.Generator()
    generator.manual_seed(seed)
    return RandomSampler(dataset, generator=generator)


def fill_from_process_group(num_replicas: int | None, rank: int | None) -> tuple[int, int]:
    """``(num_replicas, rank)``, each left out taken from the default process group (one
    rank, rank 0, without one), as accelerate's PartialState and mmengine's get_dist_info do."""
    import torch.distributed as dist

    in_group = dist.is_available() and dist.is_initialized()
    if num_replicas is None:
        num_replicas = dist.get_world_size() if in_group else 1
    if rank is None:
        rank = dist.get_rank() if in_group else 0
    return num_replicas, rank
