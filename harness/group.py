"""A case run in a real process group, seen from the controller.

Turns the rank pool's typed replies into :class:`Observation` objects, so that the
checkers of ``harness.checkers`` (the same ones ``properties/`` uses) judge them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .case import Case, Observation
from .checkers import check_equal_batch_counts, check_loader_yields_sampler
from .contracts import Contract
from .plug import SamplerPlug
from .crashes import set_aside_or_raise
from .messages import Build, LoaderReadings, ReadSamplers, Reply, Request, RunLoader, SamplerReadings
from .rank_pool import RankPool
from .verdict import SamplerFault, Violation


def _request(pool: RankPool, request: Request) -> list[Reply]:
    """Every rank's reply; a sampler that raised is set aside as the in-process runner does."""
    try:
        return pool.request(request)
    except SamplerFault as fault:
        set_aside_or_raise(fault)


@dataclass(frozen=True)
class GroupRun:
    """Per epoch: every rank's sampler built from the group, built explicitly, and built
    as the only rank (num_replicas=1) in each rank's own process. The last two are empty
    for a sampler that can only be built from the group (``needs_process_group``)."""

    group: tuple[Observation, ...]
    explicit: tuple[Observation, ...]
    single: tuple[tuple[Observation, ...], ...]  # [epoch][rank], each of world size 1
    defaults: tuple[Observation, ...] = ()  # built with the dataset alone, when asked for
    has_set_epoch: bool = True  # False: the sampler has none, so set_epoch was never called


def run_samplers(
    pool: RankPool, plug: SamplerPlug, contract: Contract, case: Case, epochs: Sequence[int | None] = (None,),
    with_defaults: bool = False,
) -> GroupRun:
    """Read every rank's sampler for each epoch. A sampler that takes its rank from the group
    only is built from the group only: ``explicit`` and ``single`` stay empty. ``with_defaults``
    also builds it from the dataset alone."""
    builds = (Build.GROUP,) if plug.needs_process_group else (Build.GROUP, Build.EXPLICIT, Build.SINGLE)
    builds += (Build.DEFAULTS,) if with_defaults else ()
    request = ReadSamplers(plug.spec, contract, case, tuple(epochs), builds)
    replies: list[SamplerReadings] = _request(pool, request)  # type: ignore[assignment]

    def observation(build: Build, k: int, ranks: Sequence[SamplerReadings], at: Case) -> Observation:
        readings = [reply.readings[build][k] for reply in ranks]
        batches = tuple(r.batches for r in readings) if contract.yields_batches else None
        return Observation(at, tuple(r.indices for r in readings), tuple(r.length for r in readings), batches)

    has_set_epoch = all(reply.has_set_epoch for reply in replies)
    # An epoch the sampler could not be told is no epoch: the case says set_epoch was not called.
    at_epoch = [case.with_(epoch=epoch if has_set_epoch else None) for epoch in epochs]
    group = tuple(observation(Build.GROUP, k, replies, at) for k, at in enumerate(at_epoch))
    defaults = tuple(observation(Build.DEFAULTS, k, replies, at) for k, at in enumerate(at_epoch)) if with_defaults else ()
    if plug.needs_process_group:
        return GroupRun(group=group, explicit=(), single=(), defaults=defaults, has_set_epoch=has_set_epoch)
    return GroupRun(
        group=group,
        explicit=tuple(observation(Build.EXPLICIT, k, replies, at) for k, at in enumerate(at_epoch)),
        single=tuple(
            tuple(observation(Build.SINGLE, k, [reply], at.with_(world_size=1)) for reply in replies)
            for k, at in enumerate(at_epoch)
        ),
        defaults=defaults,
        has_set_epoch=has_set_epoch,
    )


@dataclass(frozen=True)
class LoaderEpochRun:
    sampler: Observation  # what each rank's sampler yields this epoch
    batches: tuple[tuple[np.ndarray, ...], ...]  # [rank] what came out of the DataLoader
    loader_lengths: tuple[int, ...]  # [rank] len(DataLoader)
    reduced_counts: tuple[tuple[int, ...], ...]  # [rank] every rank's batch count, as all-reduced there
    has_set_epoch: bool = True  # False: the sampler has none, so set_epoch was never called

    @property
    def batch_counts(self) -> tuple[int, ...]:
        return tuple(len(b) for b in self.batches)


def run_loader(
    pool: RankPool,
    spec: str,
    contract: Contract,
    case: Case,
    epochs: Sequence[int | None],
    *,
    num_workers: int = 0,
    loader_drop_last: bool = False,
    with_sampler: bool = True,
) -> tuple[LoaderEpochRun, ...]:
    request = RunLoader(spec, contract, case, tuple(epochs), num_workers, loader_drop_last, with_sampler)
    replies: list[LoaderReadings] = _request(pool, request)  # type: ignore[assignment]
    runs = []
    has_set_epoch = all(reply.has_set_epoch for reply in replies)
    for k, epoch in enumerate(epochs):
        per_rank = [reply.epochs[k] for reply in replies]
        indices = tuple(e.sampler_indices for e in per_rank)
        runs.append(
            LoaderEpochRun(
                sampler=Observation(case.with_(epoch=epoch if has_set_epoch else None), indices,
                                    tuple(len(i) for i in indices)),
                batches=tuple(e.batches for e in per_rank),
                loader_lengths=tuple(e.loader_length for e in per_rank),
                reduced_counts=tuple(e.batch_counts for e in per_rank),
                has_set_epoch=has_set_epoch,
            )
        )
    return tuple(runs)


def missing_set_epoch(case: Case) -> Violation:
    """The one violation a sampler without set_epoch gets: where the contract promises reshuffling."""
    return Violation(
        "reshuffles_on_set_epoch",
        f"the sampler has no set_epoch() method, so set_epoch({case.epoch}) could not be called; training "
        f"loops call it every epoch to reshuffle, and without it every epoch repeats the first one's order",
    )


def loader_violations(run: LoaderEpochRun, batch_size: int | None, loader_drop_last: bool) -> list[Violation]:
    """Equal batch counts on every rank (as the all-reduce saw them), and the loader yields
    the sampler's indices. ``batch_size=None``: the sampler makes the batches itself."""
    counts = list(run.batch_counts)
    violations = check_equal_batch_counts(counts, list(run.loader_lengths))
    for rank, reduced in enumerate(run.reduced_counts):
        if list(reduced) != counts:
            violations.append(
                Violation(
                    "equal_batches",
                    f"rank {rank}: the all-reduce of the batch counts gave {list(reduced)}, but the ranks "
                    f"counted {counts}",
                )
            )
    for rank, (own, batches) in enumerate(zip(run.sampler.indices, run.batches)):
        violations += check_loader_yields_sampler(rank, own, batches, batch_size, loader_drop_last)
    return violations
