"""What the checks read: the views of what every rank yielded, made from the scenarios' replies
(``scenarios.read_epochs``). The checks import these, never the scenarios rank processes run."""

from __future__ import annotations

from dataclasses import dataclass

from sampler_conformance.core.case import Observation

from .case import StreamCase


@dataclass(frozen=True)
class StreamEpoch:
    """One epoch of every rank: the ids each yielded (as an Observation, batches kept apart),
    which worker made each batch, and the batch counts the lock step showed (real groups)."""

    observation: Observation
    workers: tuple[tuple[int, ...], ...]  # per rank, the worker of each batch
    counts: tuple[int, ...] | None  # per rank, from the lock step of rank 0; None when simulated
    has_set_epoch: bool

    @property
    def case(self) -> StreamCase:
        case = self.observation.case
        assert isinstance(case, StreamCase)
        return case


@dataclass(frozen=True)
class StreamResume:
    """A run interrupted by checkpoints of torchdata's StatefulDataLoader, beside the
    uninterrupted one: epoch e and e + 1 of each (``resume.resume_stream``)."""

    cuts: tuple[int | None, ...]  # batches taken before each checkpoint; None: the whole epoch
    uninterrupted: tuple[StreamEpoch, StreamEpoch]
    interrupted: StreamEpoch  # epoch e: the batches before every checkpoint, then the rest after the last resume
    after: StreamEpoch  # epoch e + 1, read by the resumed loader
    not_plain: str | None  # why a state could not go through torch.save/torch.load(weights_only=True)
    missing: tuple[str, ...] = ()  # Stateful methods the dataset lacks: nothing was read

    @property
    def epoch(self) -> int:
        epoch = self.interrupted.case.epoch
        assert epoch is not None
        return epoch
