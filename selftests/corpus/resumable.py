"""A resumable DistributedSampler, built from small overridable steps.

:class:`ResumableSampler` conforms to ``torch+resumable`` (the selftests certify it); the
known-bad samplers of ``resume_bad.py`` subclass it and override exactly one step, so each
differs from a conforming resumable sampler by one bug.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .families import ShardedBatchesFromGroup
from .parts import PartsSampler

# The arguments a state is only valid under: loading it elsewhere resumes at the wrong items.
SAVED_UNDER = ("dataset_size", "num_replicas", "shuffle", "seed", "drop_last")


class ResumableSampler(PartsSampler):
    """DistributedSampler's contract, plus torch's Stateful protocol.

    The state is the epoch, the items this rank yielded in the current pass, and the
    arguments it is valid under. Loading it makes the next pass skip those items; once
    a pass has ended, the state says nothing was yielded, so a state taken then resumes at
    the start of the next epoch. It also names the epoch whose pass ended, and a sampler
    that loads it and is set to that epoch again yields nothing more of it: a DataLoader's
    batch sampler reads past a rank's last item to fill a short last batch, so the pass
    ends before the loop has taken that batch, and a checkpoint taken right after it must
    not replay the epoch (docs/resume-and-elastic.md, "The resume protocol", step 8).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.yielded = 0  # items yielded in the current pass
        self.pending_skip = 0  # items the next pass skips: set by load_state_dict
        self.ended: int | None = None  # the epoch whose pass ended, until the next pass begins
        self.pending_ended: int | None = None  # a loaded state's ended: nothing of that epoch is left

    def saved_under(self) -> dict[str, Any]:
        values = {
            "dataset_size": len(self.dataset),
            "num_replicas": self.num_replicas,
            "shuffle": self.shuffle,
            "seed": self.seed,
            "drop_last": self.drop_last,
        }
        return {name: values[name] for name in self.checked_arguments()}

    def checked_arguments(self) -> tuple[str, ...]:
        return SAVED_UNDER

    def state_dict(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "yielded": self.yielded, "ended": self.ended, **self.saved_under()}

    def refuse_stale(self, state: dict[str, Any]) -> None:
        """Raise if ``state`` was saved under other arguments than this sampler's."""
        differ = {name: value for name, value in self.saved_under().items() if state.get(name) != value}
        if differ:
            saved = ", ".join(f"{name}={state.get(name)!r}" for name in differ)
            here = ", ".join(f"{name}={value!r}" for name, value in differ.items())
            raise ValueError(f"this state was saved by a sampler with {saved}, but this one has {here}")

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.refuse_stale(state)
        self.epoch = state["epoch"]
        self.pending_skip = self.yielded = state["yielded"]
        self.pending_ended = state["ended"]

    def pass_indices(self, skip: int) -> list[int]:
        """This rank's share of the epoch, before the skip."""
        return self.shard(self.pad(self.order()))

    def take_skip(self) -> int:
        skip, ended, self.pending_skip, self.pending_ended = self.pending_skip, self.pending_ended, 0, None
        return self.num_samples if ended == self.epoch else skip

    def remaining(self, indices: list[int], skip: int) -> list[int]:
        return indices[skip:]

    def count_from(self, skip: int) -> int:
        """What the count of yielded items starts at in a resumed pass."""
        return skip

    def pass_ended(self) -> None:
        self.yielded = 0
        self.ended = self.epoch

    def __iter__(self) -> Iterator[int]:
        skip = self.take_skip()
        indices = self.pass_indices(skip)
        return self.generate(self.remaining(indices, skip), self.count_from(skip))

    def generate(self, indices: list[int], count: int) -> Iterator[int]:
        self.yielded, self.ended = count, None
        for index in indices:
            self.yielded += 1
            yield index
        self.pass_ended()


class ResumableBatchShard(ShardedBatchesFromGroup):
    """A resumable batch sampler sharded as accelerate's ``BatchSamplerShard`` is (contract
    ``batch+resumable``): :class:`ShardedBatchesFromGroup`, except that ``drop_last`` drops a
    short last round instead of completing it, so a rank's pass can hold fewer batches than
    ceil(batches / W). The state is the batches this pass has yielded and the arguments it is
    valid under; a pass that ended leaves 0, so a state taken then resumes at the next pass.
    It has no set_epoch, which ``batch`` does not promise: every pass is the same."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.taken = 0  # batches yielded in the current pass
        self.pending_skip = 0  # batches the next pass skips: set by load_state_dict

    def saved_under(self) -> dict[str, Any]:
        return dict(
            dataset_size=len(self.dataset),
            num_replicas=self.num_replicas,
            shuffle=self.shuffle,
            seed=self.seed,
            drop_last=self.drop_last,
        )

    def _rounds(self):
        rounds, batches = super()._rounds()
        return (len(batches) // self.num_replicas if self.drop_last else rounds), batches

    def __iter__(self) -> Iterator[list[int]]:
        skip, self.pending_skip = self.pending_skip, 0
        return self._generate(list(super().__iter__())[skip:], skip)

    def _generate(self, batches: list[list[int]], count: int) -> Iterator[list[int]]:
        self.taken = count
        for batch in batches:
            self.taken += 1
            yield batch
        self.taken = 0

    def state_dict(self) -> dict[str, Any]:
        return {"taken": self.taken, **self.saved_under()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        differ = {name: value for name, value in self.saved_under().items() if state.get(name) != value}
        if differ:
            saved = ", ".join(f"{name}={state.get(name)!r}" for name in differ)
            raise ValueError(f"this state was saved by a sampler with {saved}, but this one has {differ}")
        self.pending_skip = self.taken = state["taken"]
