"""Known-bad resumable samplers: each is :class:`ResumableSampler` with one resume bug a
real project shipped.

The docstring's first paragraph names the bug class and cites it; ``@rejected(...)`` above
each declares the invariant that must catch it and its exact failed set under
``torch+resumable`` (``selftests/test_resume.py`` holds each to it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .rejections import rejected
from .resumable import SAVED_UNDER, ResumableSampler

# A resume that goes on from the wrong place: R2 (across the ranks) cannot fail while R1 (on
# each rank) holds and the base contract does, so every bug of R2 is one of R1 too.
ONE_RANK_WRONG = "a rank whose epoch differs from the uninterrupted one breaks resume_continues"


@rejected(
    "test_resume_continues_the_epoch",
    "resume_continues",
    {"resume_exactly_once": "k items of epoch e and the rest of epoch 0's order repeat some items and miss others"},
    under="torch+resumable",
)
class ReplaysEpochZero(ResumableSampler):
    """A resume replays epoch 0's order: the resumed pass ignores the epoch, so it skips k
    items of another permutation (huggingface/accelerate #2016, #3242, #4195)."""

    def pass_indices(self, skip: int) -> list[int]:
        if not skip:
            return super().pass_indices(skip)
        epoch, self.epoch = self.epoch, 0
        try:
            return super().pass_indices(skip)
        finally:
            self.epoch = epoch


@rejected(
    "test_resume_yields_each_item_once",
    "resume_exactly_once",
    {"resume_continues": ONE_RANK_WRONG},
    sometimes={
        "resumes_compose": "when the first resume skips past the end of the pass, the pass ends early and "
        "the second resume starts a new one"
    },
    under="torch+resumable",
)
class SkipsGlobalCount(ResumableSampler):
    """The resume skips the global count of items consumed (k items on each of W ranks)
    in each rank's own share, so k * (W - 1) items per rank are never trained (a resume
    offset on the wrong scale: mosaicml/streaming #619, where "Composer would think that 200
    samples had been seen, and pass that on to Streaming for resumption")."""

    def remaining(self, indices: list[int], skip: int) -> list[int]:
        return indices[skip * self.num_replicas :]


@rejected(
    "test_resume_at_the_epochs_boundaries",
    "resume_at_boundaries",
    under="torch+resumable",
)
class KeepsCountAfterPass(ResumableSampler):
    """A state taken after an epoch's pass ended still counts the whole pass as yielded,
    so the next epoch, after the resume, is empty (torchdata 0.11's
    StatefulDistributedSampler, meta-pytorch/data #1513; its StatefulDataLoader, #1437)."""

    def pass_ended(self) -> None:
        pass


@rejected("test_later_epochs_after_a_resume", "later_epochs_after_resume", under="torch+resumable")
class SkipsEveryEpoch(ResumableSampler):
    """The loaded skip is never cleared, so every later epoch skips its first k items too
    (huggingface/accelerate #1451; NVIDIA-NeMo/Megatron-Bridge #4565, fixed by #4601)."""

    def take_skip(self) -> int:
        return self.pending_skip


@rejected("test_two_resumes_compose", "resumes_compose", under="torch+resumable")
class CountRestartsOnResume(ResumableSampler):
    """After a resume the count starts again at 0, so a second resume in the same epoch
    skips only the items since the first (KempnerInstitute/KempnerForge #57)."""

    def count_from(self, skip: int) -> int:
        return 0


@rejected("test_state_is_plain_data", "plain_state", under="torch+resumable")
class StateHoldsNumpyArray(ResumableSampler):
    """The state holds numpy values (the rank's order as an array), which
    ``torch.load(weights_only=True)``, the default since torch 2.6, refuses: the checkpoint
    is written but cannot be loaded (huggingface/transformers #27282 made the load safe and
    broke resuming; #40500: numpy arrays need safe globals under weights_only=True)."""

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "order": np.asarray(self.pass_indices(0), dtype=np.int64)}


@rejected("test_stale_state_refused", "stale_state_refused", under="torch+resumable")
class AcceptsStaleState(ResumableSampler):
    """The state records only the world size, so a state saved under another dataset,
    seed, shuffle or drop_last is resumed at the wrong items (torchdata 0.11's
    StatefulDistributedSampler keeps only the count, meta-pytorch/data #1515;
    bghira/SimpleTuner #3093 guards a changed batch size on resume)."""

    def checked_arguments(self) -> tuple[str, ...]:
        return ("num_replicas",)


@rejected(
    "test_state_from_another_world_size_refused",
    "other_world_size_refused",
    under="torch+resumable",
)
class AcceptsOtherWorldSize(ResumableSampler):
    """The state does not record the world size, so a state saved by W ranks is resumed by
    W' ranks, each skipping into a shard of a topology that no longer exists
    (bghira/SimpleTuner #2986)."""

    def checked_arguments(self) -> tuple[str, ...]:
        return tuple(name for name in SAVED_UNDER if name != "num_replicas")


@rejected(
    "test_ranks_agree_after_a_resume",
    "resumed_ranks_agree",
    {"resume_continues": "the ranks' resumed passes lack the padding the uninterrupted ones end with"},
    sometimes={
        "resumes_compose": "a rank whose resumed pass is short ends it before the second checkpoint, so the "
        "second resume starts a new pass",
        "resumes_through_loader": "through the loader too, the resumed pass lacks the padding when the few "
        "loader examples draw an odd N, keep_last and a checkpoint after a batch or more",
    },
    under="torch+resumable",
    whole_suite=True,
)
class UnevenAfterResume(ResumableSampler):
    """Resumed from the global count of items consumed (k on each of W ranks), the sampler
    deals the rest of the epoch's order out anew, without its padding: when W does not
    divide what is left, the ranks hold 4/3/3 items, and the rank with more runs a step the
    others never join (the rebuild from the checkpointed consumed count of
    NVIDIA-NeMo/Megatron-Bridge #5944, and the open pull request NVIDIA/Megatron-LM #7299)."""

    def remaining(self, indices: list[int], skip: int) -> list[int]:
        if not skip:
            return super().remaining(indices, skip)
        unpadded = self.pad(self.order())[: len(self.dataset)]
        return unpadded[skip * self.num_replicas :][self.rank :: self.num_replicas]


# Only loader workers prefetch ahead of the loop: the test without them holds.
@rejected(
    "test_resume_through_stateful_dataloader_with_workers",
    "resumes_through_loader",
    under="torch+resumable",
    whole_suite=True,
)
class LiveStateDict(ResumableSampler):
    """``state_dict()`` returns the dict the sampler keeps its progress in, not a copy, so the
    state goes on changing as the sampler is read. Resumed on its own, or through a loader
    without workers, it is right: the state is saved before the sampler moves on. With
    workers, torchdata's StatefulDataLoader keeps the state of each batch as the main
    process draws it, ahead of the loop: the kept state moves on with the prefetch, and the
    resume skips the batches prefetched but never trained on, or, when the prefetch reached
    the end of the pass, replays the epoch (the snapshot aliasing of meta-pytorch/data
    #1547: "Because the snapshot is not deeply copied, it is mutated in place as the
    pipeline continues to yield items")."""

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
