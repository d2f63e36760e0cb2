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

    observation: Observation[StreamCase]
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
    """A run checkpointed, resumed, checkpointed again and resumed again through torchdata's
    StatefulDataLoader, beside the uninterrupted one (``resume.resume_stream``). The resumed
    epoch is e, or e + 1 when checkpoint 1 was taken at the end of e."""

    first_cut: int | None  # batches before checkpoint 1; None: the whole epoch e
    second_cut: int  # batches after resuming it, before checkpoint 2
    uninterrupted: tuple[StreamEpoch, StreamEpoch]  # epochs e and e + 1
    resumed_once: StreamEpoch  # epoch e: the batches before checkpoint 1, then the resumed run's rest of it
    resumed_twice: StreamEpoch  # the resumed epoch: checkpoint 2 resumed for its rest
    after: StreamEpoch  # epoch e + 1 as the resumed run read it
    not_plain: str | None  # why a state could not go through torch.save/torch.load(weights_only=True)
    missing: tuple[str, ...] = ()  # Stateful methods the dataset lacks: nothing was read

    @property
    def epoch(self) -> int:
        """e: the epoch of checkpoint 1."""
        epoch = self.uninterrupted[0].case.epoch
        assert epoch is not None
        return epoch

    @property
    def resumed_epoch(self) -> StreamEpoch:
        """The uninterrupted run's reading of the resumed epoch."""
        return self.uninterrupted[1] if self.first_cut is None else self.uninterrupted[0]
