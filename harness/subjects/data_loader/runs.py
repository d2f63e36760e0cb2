"""What the checks read: the views of what every rank's loader yielded, made from the
scenario's replies (``scenarios.read_epochs``). The checks import these, never the scenarios
rank processes run."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sampler_conformance.core.case import Observation

from .case import LoaderCase


@dataclass(frozen=True)
class LoaderEpoch:
    """Every rank's batches of one epoch (their instance ids), and the epoch hook the loaders
    have (``reshuffle`` or ``set_epoch``; None: neither)."""

    observation: Observation[LoaderCase]
    hook: str | None

    @property
    def case(self) -> LoaderCase:
        case = self.observation.case
        assert isinstance(case, LoaderCase)
        return case

    @property
    def batches(self) -> tuple[tuple[np.ndarray, ...], ...]:
        assert self.observation.batches is not None
        return self.observation.batches

    @property
    def batch_counts(self) -> tuple[int, ...]:
        return tuple(len(batches) for batches in self.batches)

    def global_batch(self, step: int) -> np.ndarray:
        """The instances of global batch ``step``: every rank's batch ``step`` together, sorted
        (a rank that has none adds nothing)."""
        parts = [batches[step] for batches in self.batches if step < len(batches)]
        return np.sort(np.concatenate(parts)) if parts else np.empty(0, np.int64)
