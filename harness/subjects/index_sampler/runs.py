"""The controller's views of the scenarios' replies that the checks judge: each a run of the
ranks, its readings as :class:`Observation` objects of the case.

The scenarios build them (``scenarios/loader.py``, ``scenarios/resume.py``,
``scenarios/resume_loader.py``, ``scenarios/elastic.py``) and the checks read them
(the ``*_checks.py`` modules), which import no scenario.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sampler_conformance.core.case import Observation, ReportedLength

from .case import IndexCase


@dataclass(frozen=True)
class LoaderEpochRun:
    sampler: Observation[IndexCase]  # what each rank's sampler yields this epoch
    batches: tuple[tuple[np.ndarray, ...], ...]  # [rank] what came out of the DataLoader
    loader_lengths: tuple[ReportedLength, ...]  # [rank] len(DataLoader)
    reduced_counts: tuple[tuple[int, ...], ...]  # [rank] every rank's batch count, as all-reduced there
    has_set_epoch: bool = True  # False: the sampler has none, so set_epoch was never called

    @property
    def batch_counts(self) -> tuple[int, ...]:
        return tuple(len(b) for b in self.batches)


@dataclass(frozen=True)
class ResumeRun:
    """The ranks' replies, as Observations of the case (each with its epoch)."""

    epoch: int  # e, the epoch interrupted
    uninterrupted: tuple[Observation[IndexCase], ...]  # [epoch]: e, e+1, ...
    consumed: tuple[Observation[IndexCase], ...]  # [cut]
    resumed: tuple[Observation[IndexCase], ...]  # [epoch]: the resumed pass, then the later epochs
    first_resumed_epoch: int  # the epoch of resumed[0]: e, or e + 1 after a finished pass
    not_plain: tuple[tuple[int, str], ...]  # (rank, why) for states that are not plain data
    missing: tuple[str, ...]  # Stateful methods the sampler lacks
    has_set_epoch: bool
    # In a process group, [rank]: every rank's count of the resumed pass's items (and batches)
    # as the all-reduce delivered them on that rank; empty in-process.
    reduced_items: tuple[tuple[int, ...], ...] = ()
    reduced_batches: tuple[tuple[int, ...], ...] = ()

    def uninterrupted_at(self, epoch: int) -> Observation[IndexCase]:
        return self.uninterrupted[epoch - self.epoch]


@dataclass(frozen=True)
class ElasticRun:
    """An elastic run's legs as Observations: what each leg consumed, and the last leg's rest."""

    epoch: int
    world_sizes: tuple[int, ...]  # of each leg, the first one's W first
    taken: tuple[int, ...]  # items each rank was asked for in each leg but the last
    uninterrupted: Observation[IndexCase]  # epoch e on the first leg's W ranks
    undropped: Observation[IndexCase]  # the same built without drop_last (the same run without it)
    consumed: tuple[Observation[IndexCase], ...]  # [leg]: what each leg but the last took before its checkpoint
    rest: Observation[IndexCase]  # the last leg's pass
    missing: tuple[str, ...]  # Stateful methods the sampler lacks
    # In a process group, [rank]: the last leg's all-reduced counts of its items and batches.
    reduced_items: tuple[tuple[int, ...], ...] = ()
    reduced_batches: tuple[tuple[int, ...], ...] = ()

    def describe(self) -> str:
        """``after 3 items on each of W=2 ranks, then 1 item on each of W=3 ranks, resumed on W=4``."""
        legs = [
            f"{taken} item{'' if taken == 1 else 's'} on each of W={world} ranks"
            for taken, world in zip(self.taken, self.world_sizes, strict=False)
        ]
        return f"epoch {self.epoch}: {', then '.join(legs)}, resumed on W={self.world_sizes[-1]} from rank 0's state"
