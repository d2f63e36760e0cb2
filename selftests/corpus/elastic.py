"""An elastic DistributedSampler, and an elastic batch shard: resumable on any world size,
from a global cursor.

:class:`ElasticSampler` conforms to ``torch+elastic`` (the selftests certify it through the
whole suite), and :class:`ElasticBatchShard` holds every invariant of ``batch+elastic`` judged in
one process (the selftests certify it there, as the batch scripts it backs read); the known-bad
samplers of ``elastic_bad.py`` subclass the first and override exactly one step.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from .resumable import SAVED_UNDER, ResumableBatchShard, ResumableSampler


class ElasticSampler(ResumableSampler):
    """DistributedSampler's contract, plus a state that any world size can resume.

    The state holds the global cursor: how many items of the epoch's global order the ranks
    consumed together (the cursor it resumed from, plus this rank's count on every rank,
    since ranks step in lockstep), and where that order ends (N, or total_size with
    drop_last, on the world that began the epoch). A sampler that loads it, on any number of
    ranks, deals the rest of the order out strided and pads it from the epoch's head as
    DistributedSampler pads, so on the same world size the resumed pass is exactly the rest
    of the uninterrupted one.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cursor = 0  # items of the global order consumed before this pass began
        self.end: int | None = None  # where the epoch's global order ends; None: on this world
        self.saved_on: int | None = None  # the world size of the state loaded; None: none loaded

    def checked_arguments(self) -> tuple[str, ...]:
        return tuple(name for name in SAVED_UNDER if name != "num_replicas")

    def end_of_epoch(self) -> int:
        if self.end is not None:
            return self.end
        return self.total_size if self.drop_last else len(self.dataset)

    def global_cursor(self) -> int:
        return min(self.cursor + self.yielded * self.num_replicas, self.end_of_epoch())

    def state_dict(self) -> dict[str, Any]:
        return {
            "epoch": self.epoch,
            "cursor": self.global_cursor(),
            "end": self.end_of_epoch(),
            "saved_on": self.num_replicas,
            "ended": self.ended,
            **self.saved_under(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.refuse_stale(state)
        self.epoch = state["epoch"]
        self.cursor, self.end, self.saved_on = state["cursor"], state["end"], state["saved_on"]
        self.yielded, self.pending_ended = 0, state["ended"]

    def on_another_world(self) -> bool:
        """The state loaded was saved on another number of ranks."""
        return self.saved_on is not None and self.saved_on != self.num_replicas

    def rest(self, order: list[int], cursor: int, end: int) -> list[int]:
        """The part of the epoch's global order not consumed yet."""
        return order[cursor:end]

    def pad_rest(self, rest: list[int], epoch_order: list[int]) -> list[int]:
        """The rest, padded from the epoch's head to a multiple of the world size (cut to one with drop_last)."""
        if self.drop_last:
            return rest[: len(rest) - len(rest) % self.num_replicas]
        padding = -len(rest) % self.num_replicas
        return rest + (epoch_order * math.ceil(padding / max(len(epoch_order), 1)))[:padding]

    def __iter__(self) -> Iterator[int]:
        ended, self.pending_ended = self.pending_ended, None
        order = self.order()
        end = self.end_of_epoch()
        rest = [] if ended == self.epoch else self.rest(order, self.cursor, end)  # that epoch's pass had ended
        padded = self.pad_rest(rest, order[:end])
        return self.generate(padded[self.rank :: self.num_replicas], 0)

    def pass_ended(self) -> None:
        super().pass_ended()
        self.cursor, self.end, self.saved_on = 0, None, None


class ElasticBatchShard(ResumableBatchShard):
    """:class:`ResumableBatchShard` with a state that any world size can resume (contract
    ``batch+elastic``): the global cursor, the batches of the epoch's order the ranks took
    together (the cursor it resumed from, plus this rank's count on every rank, since ranks
    step in lockstep). A shard that loads it, on any number of ranks, deals the rest out batch
    by batch, completed from the epoch's first batches as the uninterrupted pass completes its
    last round (cut to whole rounds with drop_last), so on the same world size the resumed
    pass is exactly the rest of the uninterrupted one."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cursor = 0  # batches of the epoch's order the ranks took before this pass began

    def saved_under(self) -> dict[str, Any]:
        return {name: value for name, value in super().saved_under().items() if name != "num_replicas"}

    def state_dict(self) -> dict[str, Any]:
        cursor = min(self.cursor + self.taken * self.num_replicas, len(self._batches()))
        return {"cursor": cursor, **self.saved_under()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict({**state, "taken": 0})  # refuses a state saved under other arguments
        self.cursor = state["cursor"]

    def __iter__(self) -> Iterator[list[int]]:
        batches = self._batches()
        rest = batches[self.cursor :]
        if self.drop_last:
            rest = rest[: len(rest) - len(rest) % self.num_replicas]
        else:
            padding = -len(rest) % self.num_replicas
            rest += (batches * math.ceil(padding / max(len(batches), 1)))[:padding]
        return self._dealt(rest[self.rank :: self.num_replicas])

    def _dealt(self, mine: list[list[int]]) -> Iterator[list[int]]:
        self.taken = 0
        for batch in mine:
            self.taken += 1
            yield batch
        self.taken = self.cursor = 0  # the pass ended: a state taken now resumes at the next one
