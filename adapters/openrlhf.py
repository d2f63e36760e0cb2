"""OpenRLHF (PyPI ``openrlhf``): its ``DistributedSampler``, resumed as its trainers resume it.

``openrlhf/utils/distributed_sampler.py`` is torch's DistributedSampler with one addition:
``set_epoch(epoch, consumed_samples=0)`` (and the constructor's ``consumed_samples``) skips
the first ``consumed_samples // num_replicas`` indices of this rank's share. Its trainers
keep ``consumed_samples`` in their checkpoint and resume through ``set_epoch`` (the SFT and
reward-model trainers' ``fit``): there is no ``state_dict``. So the factory declares that
entry point and :class:`~sampler_conformance.adapters.resumed_by_count.ResumedByCount`
plays the trainer's part: contract ``torch+resumable``.

The package's ``__init__`` imports its trainers (deepspeed, transformers, ray...); the
sampler's module imports torch alone, so it is loaded from its file, and
``pip install --no-deps openrlhf`` is enough.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from . import SamplerPackageMissing, fill_from_process_group
from .resumed_by_count import ResumedByCount

DISTRIBUTION = "openrlhf"
SAMPLER_FILE = Path("utils") / "distributed_sampler.py"


@cache
def _sampler_module() -> ModuleType:
    """openrlhf's sampler module, loaded from its file without the package's ``__init__``."""
    package = importlib.util.find_spec("openrlhf")
    if package is None or not package.submodule_search_locations:
        raise SamplerPackageMissing(
            f"this adapter loads {SAMPLER_FILE} of the PyPI package {DISTRIBUTION!r}, which is not installed. "
            f"Install it next to torch: pip install --no-deps {DISTRIBUTION}"
        )
    path = Path(next(iter(package.submodule_search_locations))) / SAMPLER_FILE
    spec = importlib.util.spec_from_file_location("openrlhf_distributed_sampler", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def resume_from_count(sampler: Any, epoch: int, consumed: int) -> None:
    """OpenRLHF's entry point: the epoch and the samples the whole job consumed of it."""
    sampler.set_epoch(epoch, consumed)


def DistributedSampler(  # noqa: N802  # named as the sampler it builds
    dataset: Any,
    num_replicas: int | None = None,
    rank: int | None = None,
    shuffle: bool = True,
    seed: int = 0,
    drop_last: bool = False,
) -> ResumedByCount:
    sampler = _sampler_module().DistributedSampler(
        dataset, num_replicas, rank, shuffle=shuffle, seed=seed, drop_last=drop_last
    )
    world_size, _ = fill_from_process_group(num_replicas, rank)
    return ResumedByCount(sampler, resume_from_count, world_size)
