"""What the checks read: the views of what every rank's loader yielded, made from the
scenario's replies (``scenarios.read_epochs``). The checks import these, never the scenarios
rank processes run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sampler_conformance.core.case import NoLen, Observation

from .case import LoaderCase


@dataclass(frozen=True)
class LoaderEpoch:
    """Every rank's batches of one epoch (their instance ids), the epoch hook the loaders have
    (``reshuffle`` or ``set_epoch``; None: neither), and in a real group every rank's batch
    count as the lock step saw it (None: simulated ranks, read in turn)."""

    observation: Observation[LoaderCase]
    hook: str | None
    stepped: tuple[int, ...] | None = None

    @classmethod
    def of(
        cls,
        case: LoaderCase,
        batches: Sequence[tuple[np.ndarray, ...]],
        hook: str | None,
        stepped: tuple[int, ...] | None = None,
    ) -> LoaderEpoch:
        """The epoch ``case`` names, from each rank's batches."""
        return cls(
            Observation(
                case,
                tuple(concatenated(rank_batches) for rank_batches in batches),
                tuple(NoLen.NOT_ASKED for _ in batches),  # len() is not part of this slice's contract
                tuple(batches),
            ),
            hook,
            stepped,
        )

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
        """Each rank's batches: as the lock step counted them in a real group, else as read."""
        if self.stepped is not None:
            return self.stepped
        return tuple(len(batches) for batches in self.batches)

    def global_batch(self, step: int) -> np.ndarray:
        """The instances of global batch ``step``: every rank's batch ``step`` together, sorted
        (a rank that has none adds nothing)."""
        parts = [batches[step] for batches in self.batches if step < len(batches)]
        return np.sort(np.concatenate(parts)) if parts else np.empty(0, np.int64)


def concatenated(batches: Sequence[np.ndarray]) -> np.ndarray:
    return np.concatenate(batches) if batches else np.empty(0, dtype=np.int64)


@dataclass(frozen=True)
class LoaderResume:
    """A run checkpointed after ``cut`` batches of epoch e and resumed in fresh loaders, beside
    the uninterrupted run (``resume.resume_loader``)."""

    cut: int
    uninterrupted: tuple[LoaderEpoch, LoaderEpoch]  # epochs e and e + 1
    # Per order of the epoch hook and load_state_dict (its words): epoch e as the interrupted
    # run read it (the batches before the checkpoint, then the resumed loader's), and epoch e + 1.
    resumed: tuple[tuple[str, LoaderEpoch, LoaderEpoch], ...]
    missing: tuple[str, ...] = ()  # the Stateful methods the loader lacks: nothing was resumed

    @property
    def epoch(self) -> int:
        epoch = self.uninterrupted[0].case.epoch
        assert epoch is not None, "a resume is of a given epoch"
        return epoch


@dataclass(frozen=True)
class LoaderResumeElsewhere:
    """Rank 0's checkpoint after ``cut`` global batches at DP size ``saved_on``, resumed on every
    rank of another (``resume.resume_on_other_dp_size``), beside that size's uninterrupted epoch."""

    saved_on: int
    cut: int
    uninterrupted: LoaderEpoch
    resumed: LoaderEpoch  # the rest of the epoch, from the resume on
    missing: tuple[str, ...] = ()


@dataclass(frozen=True)
class LoaderCheckpoint:
    """Every rank's ``state_dict()`` after ``cut`` batches of an epoch, carried through a
    checkpoint file (``resume.checkpoint_loader``)."""

    cut: int
    before: LoaderEpoch  # the batches read before the checkpoint
    not_plain: tuple[tuple[int, str], ...]  # (rank, why) for each state that could not make the trip
    missing: tuple[str, ...] = ()
