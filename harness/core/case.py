"""One drawn configuration of a distributed sampler, and what the ranks made of it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, TypeVar

import numpy as np


class NoLen(Enum):
    """What a reading holds in place of ``len(sampler)`` when it has no count from it, and why.

    Only ``UNDEFINED`` is the sampler's: torch's Sampler does not require ``__len__``, so its
    absence counts only under ``len_matches_iter``, where the contract promises it. The
    others are the suite's choice not to ask.
    """

    ENDLESS = "endless, len() not asked"  # an endless sampler's prefix: no pass ends to be counted
    NOT_ASKED = "len() not asked"  # part of a pass (a resume's cut), or what a loader yielded
    UNDEFINED = "no __len__"  # the sampler defines no __len__, so len() cannot be asked


@dataclass(frozen=True)
class LenRaised:
    """``len(sampler)`` raised: what it raised, in words. Charged to the subject's length
    invariant alone; what the pass yielded is judged by every other one."""

    summary: str  # "the sampler raised ValueError in __len__: ..."


# len(sampler) as one reading saw it: a count, or why there is none.
ReportedLength = int | NoLen | LenRaised


def length_words(reported: ReportedLength) -> str:
    """A reported length as a rank's line shows it: ``len()=3``, ``no __len__``, ``len() raised``."""
    if isinstance(reported, int):
        return f"len()={reported}"
    return "len() raised" if isinstance(reported, LenRaised) else reported.value


C = TypeVar("C", bound="Case")


@dataclass(frozen=True)
class Case:
    """Everything that decides which indices every rank gets."""

    dataset_size: int
    world_size: int
    shuffle: bool = True
    seed: int = 0
    epoch: int | None = None  # None: set_epoch is never called
    drop_last: bool = False
    batch_size: int = 1

    def sampler_options(self, yields_batches: bool = False) -> dict[str, Any]:
        options = {"shuffle": self.shuffle, "seed": self.seed, "drop_last": self.drop_last}
        if yields_batches:  # batch samplers are built with the batch size
            options["batch_size"] = self.batch_size
        return options

    def with_(self: C, **changes: Any) -> C:
        return replace(self, **changes)

    def describe(self) -> str:
        return (
            f"N={self.dataset_size}, W={self.world_size}, shuffle={self.shuffle}, "
            f"seed={self.seed}, epoch={self.epoch}, drop_last={self.drop_last}, "
            f"batch_size={self.batch_size}"
        )


@dataclass(frozen=True)
class Observation:
    """What every rank yielded for one case: indices and ``len(sampler)`` per rank.

    For a batch sampler ``len()`` counts batches, and ``batches`` keeps them apart.
    """

    case: Case
    indices: tuple[np.ndarray, ...]  # per rank; a batch sampler's batches concatenated
    reported_lengths: tuple[ReportedLength, ...]  # len(sampler) after the pass, or why there is none
    batches: tuple[tuple[np.ndarray, ...], ...] | None = None  # per rank, for batch samplers
    # len(sampler) before the pass (after set_epoch), as a training loop sizes its schedule; None: not asked
    lengths_before: tuple[ReportedLength, ...] | None = None

    @property
    def lacks_len(self) -> bool:
        """Some rank's sampler defines no ``__len__``."""
        return NoLen.UNDEFINED in self.reported_lengths

    @property
    def lengths(self) -> tuple[int, ...]:
        """Items each rank yielded: indices, or batches for a batch sampler."""
        if self.batches is not None:
            return tuple(len(b) for b in self.batches)
        return tuple(len(a) for a in self.indices)

    @property
    def items_read(self) -> int:
        """Items the ranks yielded, in all (a batch sampler's batches by their items)."""
        return sum(len(a) for a in self.indices)

    def global_order(self, layout: str = "strided") -> np.ndarray | None:
        """The global order Q the ranks' shares were cut from; None if it cannot be rebuilt.

        strided: Q[i] = rank (i mod W)'s item (i div W), which needs equal lengths;
        contiguous: the ranks' blocks one after another.
        """
        if not self.indices:
            return np.empty(0, dtype=np.int64)
        if layout == "contiguous":
            return np.concatenate(self.indices)
        if len(set(self.lengths)) != 1:
            return None
        return np.stack(self.indices, axis=1).reshape(-1)
