"""Known-bad resumable samplers: each is :class:`ResumableSampler` with one resume bug a
real project shipped.

The docstring's first paragraph names the bug class and cites it; ``Rejected by`` names
the invariant that must catch it (``selftests/test_resume.py`` holds each to its exact
failed set under ``torch+resumable``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .resumable import SAVED_UNDER, ResumableSampler


class ReplaysEpochZero(ResumableSampler):
    """A resume replays epoch 0's order: the resumed pass ignores the epoch, so it skips k
    items of another permutation (huggingface/accelerate #2016, #3242, #4195).

    Rejected by: resume continues the epoch.
    """

    def pass_indices(self, skip: int) -> list[int]:
        if not skip:
            return super().pass_indices(skip)
        epoch, self.epoch = self.epoch, 0
        try:
            return super().pass_indices(skip)
        finally:
            self.epoch = epoch


class SkipsGlobalCount(ResumableSampler):
    """The resume skips the global count of items consumed (k items on each of W ranks)
    in each rank's own share, so k * (W - 1) items per rank are never trained (a resume
    offset on the wrong scale: mosaicml/streaming #619, where "Composer would think that 200
    samples had been seen, and pass that on to Streaming for resumption").

    Rejected by: nothing repeated or lost across a resume.
    """

    def remaining(self, indices: list[int], skip: int) -> list[int]:
        return indices[skip * self.num_replicas :]


class KeepsCountAfterPass(ResumableSampler):
    """A state taken after an epoch's pass ended still counts the whole pass as yielded,
    so the next epoch, after the resume, is empty (torchdata 0.11's
    StatefulDistributedSampler, meta-pytorch/data #1513; its StatefulDataLoader, #1437).

    Rejected by: resume at an epoch's start and end.
    """

    def pass_ended(self) -> None:
        pass


class SkipsEveryEpoch(ResumableSampler):
    """The loaded skip is never cleared, so every later epoch skips its first k items too
    (huggingface/accelerate #1451; NVIDIA-NeMo/Megatron-Bridge #4565, fixed by #4601).

    Rejected by: later epochs unchanged by a resume.
    """

    def take_skip(self) -> int:
        return self.pending_skip


class CountRestartsOnResume(ResumableSampler):
    """After a resume the count starts again at 0, so a second resume in the same epoch
    skips only the items since the first (KempnerInstitute/KempnerForge #57).

    Rejected by: two resumes compose.
    """

    def count_from(self, skip: int) -> int:
        return 0


class StateHoldsNumpyArray(ResumableSampler):
    """The state holds numpy values (the rank's order as an array), which
    ``torch.load(weights_only=True)``, the default since torch 2.6, refuses: the checkpoint
    is written but cannot be loaded (huggingface/transformers #27282 made the load safe and
    broke resuming; #40500: numpy arrays need safe globals under weights_only=True).

    Rejected by: state is plain data.
    """

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "order": np.asarray(self.pass_indices(0), dtype=np.int64)}


class AcceptsStaleState(ResumableSampler):
    """The state records only the world size, so a state saved under another dataset,
    seed, shuffle or drop_last is resumed at the wrong items (torchdata 0.11's
    StatefulDistributedSampler keeps only the count, meta-pytorch/data #1515;
    bghira/SimpleTuner #3093 guards a changed batch size on resume).

    Rejected by: a stale state is refused.
    """

    def checked_arguments(self) -> tuple[str, ...]:
        return ("num_replicas",)


class AcceptsOtherWorldSize(ResumableSampler):
    """The state does not record the world size, so a state saved by W ranks is resumed by
    W' ranks, each skipping into a shard of a topology that no longer exists
    (bghira/SimpleTuner #2986).

    Rejected by: a state from another world size is refused.
    """

    def checked_arguments(self) -> tuple[str, ...]:
        return tuple(name for name in SAVED_UNDER if name != "num_replicas")


class UnevenAfterResume(ResumableSampler):
    """Resumed from the global count of items consumed (k on each of W ranks), the sampler
    deals the rest of the epoch's order out anew, without its padding: when W does not
    divide what is left, the ranks hold 4/3/3 items, and the rank with more runs a step the
    others never join (the rebuild from the checkpointed consumed count of
    NVIDIA-NeMo/Megatron-Bridge #5944, and the open pull request NVIDIA/Megatron-LM #7299).

    Rejected by: ranks agree after a resume (in real process groups).
    """

    def remaining(self, indices: list[int], skip: int) -> list[int]:
        if not skip:
            return super().remaining(indices, skip)
        unpadded = self.pad(self.order())[: len(self.dataset)]
        return unpadded[skip * self.num_replicas :][self.rank :: self.num_replicas]


class LiveStateDict(ResumableSampler):
    """``state_dict()`` returns the dict the sampler keeps its progress in, not a copy, so the
    state goes on changing as the sampler is read. Resumed on its own, or through a loader
    without workers, it is right: the state is saved before the sampler moves on. With
    workers, torchdata's StatefulDataLoader keeps the state of each batch as the main
    process draws it, ahead of the loop: the kept state moves on with the prefetch, and the
    resume skips the batches prefetched but never trained on, or, when the prefetch reached
    the end of the pass, replays the epoch (the snapshot aliasing of meta-pytorch/data
    #1547: "Because the snapshot is not deeply copied, it is mutated in place as the
    pipeline continues to yield items").

    Rejected by: resume through StatefulDataLoader (in real process groups).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.progress: dict[str, Any] = {"yielded": 0}
        super().__init__(*args, **kwargs)

    @property
    def yielded(self) -> int:
        return self.progress["yielded"]

    @yielded.setter
    def yielded(self, count: int) -> None:
        self.progress["yielded"] = count

    def state_dict(self) -> dict[str, Any]:
        self.progress.update(super().state_dict())
        return self.progress
