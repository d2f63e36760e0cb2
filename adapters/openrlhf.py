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

from types import ModuleType
from typing import Any

from . import fill_from_process_group, package_file
from .resumed_by_count import ResumedByCount

DISTRIBUTION = "openrlhf"
SAMPLER_FILE = "utils/distributed_sampler.py"


def _sampler_module() -> ModuleType:
    return package_file("openrlhf", SAMPLER_FILE, DISTRIBUTION)


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
