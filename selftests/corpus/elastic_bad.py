"""Known-bad elastic samplers: each is :class:`ElasticSampler` with one bug of resuming on
another world size that a real project shipped.

Each is right on the world size it was saved on (it holds every resumable invariant) and
wrong only when the world size changes. The docstring's first paragraph names the bug
class and cites it; ``@rejected(...)`` above each declares the invariant that must catch it
and its exact failed set under ``torch+elastic`` (``selftests/test_elastic.py`` holds each to it).
"""

from __future__ import annotations

from typing import Any

from .elastic import ElasticSampler
from .rejections import rejected

# W -> W' -> W'': the last leg of a chain is a change of world size too, judged as E1 judges one.
LAST_LEG_TOO = "the last leg of a chain W -> W' -> W'' is a change of world size too, with the same bug"


@rejected(
    "test_elastic_resume_continues_the_global_order",
    "elastic_cursor",
    {"elastic_hops_compose": LAST_LEG_TOO},
    under="torch+elastic",
    whole_suite=True,
)
class RestReordered(ElasticSampler):
    """Resumed on another world size, the rest of the epoch comes in another order: the
    items not consumed yet, rebuilt as a set and sorted, rather than the rest of the
    epoch's order (torch's ElasticDistributedSampler draws a new permutation of the rest,
    pytorch/pytorch #147967: "indices should keep order. But it doesn't actually keep the
    order"; horovod/horovod #2297 keeps its remaining indices in order because a set
    would not)."""

    def rest(self, order: list[int], cursor: int, end: int) -> list[int]:
        rest = super().rest(order, cursor, end)
        return sorted(rest) if self.on_another_world() else rest


@rejected(
    "test_elastic_resume_yields_each_item_once",
    "elastic_exactly_once",
    {
        "elastic_cursor": "the new ranks go on from another place of the global order",
        "elastic_hops_compose": LAST_LEG_TOO,
    },
    under="torch+elastic",
    whole_suite=True,
)
class SkipsOwnCountOnNewWorld(ElasticSampler):
    """Resumed on another world size, each new rank skips the per-rank count the old ranks
    had consumed, in its own new share: with fewer ranks items are trained twice, with more
    they are never trained (huggingface/transformers #40245, "When elastic training is
    enabled, data may be lost or over-read"; NVIDIA-NeMo/Megatron-Bridge #5637, a DP=2
    checkpoint resumed at DP=1 that "could skip or repeat samples")."""

    def rest(self, order: list[int], cursor: int, end: int) -> list[int]:
        if not self.on_another_world():
            return super().rest(order, cursor, end)
        assert self.saved_on is not None
        per_rank = -(-cursor // self.saved_on)
        return order[per_rank * self.num_replicas : end]


@rejected(
    "test_elastic_resume_leaves_equal_counts",
    "elastic_ranks_agree",
    sometimes={
        "elastic_hops_compose": "when a chain's middle leg takes every item of its longest rank, its shorter "
        "ranks take fewer, and rank 0's state overstates the cursor"
    },
    under="torch+elastic",
    whole_suite=True,
)
class UnpaddedOnNewWorld(ElasticSampler):
    """Resumed on another world size, the rest of the epoch is dealt out without padding,
    so when the new world size does not divide it the ranks hold 4/3/3 items and one runs a
    step more (intelligent-machine-learning/dlrover #1553 and #1339: after scaling, "len(indices)
    and num_samples might not be equal" when the completed count is not divisible by the
    number of replicas)."""

    def pad_rest(self, rest: list[int], epoch_order: list[int]) -> list[int]:
        return rest if self.on_another_world() else super().pad_rest(rest, epoch_order)


@rejected("test_world_size_changes_compose", "elastic_hops_compose", under="torch+elastic", whole_suite=True)
class KeepsFirstWorldSize(ElasticSampler):
    """The state counts the items each rank consumed since the epoch began and keeps the
    world size the epoch began on, so one change of world size resumes right, and a second
    one puts the cursor at that count times the first world size: W -> W' -> W'' misaligns
    (mosaicml/streaming #301: a run resumed on N/K nodes and then back on N nodes
    "potentially re-including" samples already seen)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.first_world: int | None = None
        self.counted = 0  # items this rank's predecessors consumed in the epoch, per rank

    def state_dict(self) -> dict[str, Any]:
        first = self.first_world or self.num_replicas
        per_rank = self.counted + self.yielded
        cursor = min(per_rank * first, self.end_of_epoch())
        return {**super().state_dict(), "cursor": cursor, "first_world": first, "counted": per_rank}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.first_world, self.counted = state["first_world"], state["counted"]

    def pass_ended(self) -> None:
        super().pass_ended()
        self.first_world, self.counted = None, 0
