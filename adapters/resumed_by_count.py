"""Samplers their training loop resumes by a count it keeps, given torch's Stateful protocol.

Some libraries' samplers keep no state of their own: the trainer counts what the job
consumed of the epoch and hands the sampler that count when it resumes, through an entry
point of the library's (openrlhf's ``set_epoch(epoch, consumed_samples)``, fairchem's
``set_epoch_and_start_iteration(epoch, start_iter)``). An adapter declares that entry point
as ``resume(sampler, epoch, consumed)`` and wraps the library's sampler in
:class:`ResumedByCount`, which plays the loop's part: it counts the items this rank yielded
of the epoch, ``state_dict()`` is ``{"epoch": e, "consumed": c}`` (c: the items the whole job
consumed, this rank's count times the world size, as the loop counts steps times the
global batch). Every ``set_epoch(e)`` goes through the entry point, as those loops begin
every epoch (fairchem's calls ``set_epoch_and_start_iteration(e, 0)``: its plain
``set_epoch`` keeps the last start): with a count of 0, or with the count of a state
``load_state_dict(state)`` loaded for that epoch (or at the next pass, where no
``set_epoch`` comes between, as torchdata's StatefulDataLoader loads a sampler's state and
iterates it). ``+resumable`` then judges the library's resume as any other
(docs/resume-and-elastic.md, "Samplers resumed by a count").

The count carries nothing else: a count from another dataset or world size is resumed
from as any other, which ``stale_state_refused`` and ``other_world_size_refused`` say.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

# The library's entry point: resume(sampler, epoch, consumed), consumed counted over the whole job.
Resume = Callable[[Any, int, int], None]


class ResumedByCount:
    """``sampler`` with the Stateful protocol its loop gives it, resuming through ``resume``."""

    def __init__(self, sampler: Any, resume: Resume, world_size: int) -> None:
        self.sampler = sampler
        self._resume = resume
        self._world_size = world_size
        self.epoch = 0
        self.start = 0  # items of the epoch this rank's pass skips: the resumed count's share
        self.yielded = 0  # items of the epoch this rank has yielded, those skipped included
        self._loaded: tuple[int, int] | None = None  # (epoch, consumed) of a state loaded, until set_epoch

    def set_epoch(self, epoch: int) -> None:
        """The epoch through the library's entry point, as its loop begins every epoch: from
        the count loaded for it, else from its start (a count of 0)."""
        loaded, self._loaded = self._loaded, None
        consumed = loaded[1] if loaded is not None and loaded[0] == epoch else 0
        self._resume(self.sampler, epoch, consumed)
        self.epoch, self.start = epoch, consumed // self._world_size

    def __iter__(self) -> Iterator[int]:
        if self._loaded is not None:  # loaded, then iterated with no set_epoch between: a loader's resume
            self.set_epoch(self._loaded[0])
        self.yielded = self.start
        for index in self.sampler:
            self.yielded += 1
            yield index

    def __len__(self) -> int:
        return len(self.sampler)

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "consumed": self.yielded * self._world_size}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self._loaded = (int(state["epoch"]), int(state["consumed"]))
