"""What the checks read: the views of what every rank yielded, made from the scenario's
replies (``scenarios.read_epochs``). The checks import these, never the scenarios rank
processes run."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sampler_conformance.core.case import Observation

from .case import BatchCase


@dataclass(frozen=True)
class PlannedEpoch:
    """Every rank's batches of one epoch, whether set_epoch was there to call, and, from a real
    group stepping in lock step, the step at which each rank ran out."""

    observation: Observation[BatchCase]
    has_set_epoch: bool
    lockstep_counts: tuple[int, ...] | None = None

    @property
    def case(self) -> BatchCase:
        case = self.observation.case
        assert isinstance(case, BatchCase)
        return case

    @property
    def batches(self) -> tuple[tuple[np.ndarray, ...], ...]:
        assert self.observation.batches is not None
        return self.observation.batches

    @property
    def batch_counts(self) -> tuple[int, ...]:
        """How many batches each rank yielded: as the lock step saw them, in a real group."""
        return self.lockstep_counts or tuple(len(batches) for batches in self.batches)
