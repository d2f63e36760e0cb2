"""One drawn configuration of a subject, and what the ranks made of it."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from enum import Enum
from typing import Any, Generic, Self, TypeVar

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

# The sizes of a case that a verdict is judged up to (the fields a subject's case has, of
# these), each with its name in the summary's words.
SIZE_FIELDS = {
    "dataset_size": "N",
    "world_size": "W",
    "batch_size": "batch size",
    "num_samples": "num_samples",
    "max_tokens": "max_tokens",
    "num_workers": "workers",
    "seed": "seed",
    "epoch": "epoch",
}


LONG_SEQUENCE = 1_000  # a field with more values than this is recorded as runs


def runs(values: Iterable[Any]) -> list[list[Any]]:
    """``values`` as runs of equal values, ``[[value, count], ...]``."""
    return [[item, sum(1 for _ in group)] for item, group in itertools.groupby(values)]


def _compact(value: Any) -> Any:
    """``value`` as plain data, a long sequence as runs of equal values."""
    if not isinstance(value, (tuple, list)):
        return value
    if len(value) <= LONG_SEQUENCE:
        return list(value)
    return {"runs": runs(value)}


def _expanded(value: Any) -> Any:
    """What :func:`_compact` recorded, as the case holds it: a list as a tuple, runs as the tuple they stand for."""
    if isinstance(value, dict) and set(value) == {"runs"}:
        return tuple(item for item, count in value["runs"] for _ in range(count))
    return tuple(value) if isinstance(value, list) else value


@dataclass(frozen=True)
class Case:
    """What every subject's drawn configuration has: the data's size, the ranks, the seed and
    the epoch. Each subject's case adds what decides its reads (``subjects/<kind>/case.py``)."""

    dataset_size: int
    world_size: int
    seed: int = 0
    epoch: int | None = None  # None: set_epoch is never called

    def with_(self: C, **changes: Any) -> C:
        return replace(self, **changes)

    def describe(self) -> str:
        return f"N={self.dataset_size}, W={self.world_size}, seed={self.seed}, epoch={self.epoch}"

    @classmethod
    def from_parameters(cls, parameters: Mapping[str, Any]) -> Self:
        """The case a record's ``parameters`` hold (:meth:`parameters` undone); a field of
        another case is left out."""
        known = {field.name for field in fields(cls)}
        return cls(**{name: _expanded(value) for name, value in parameters.items() if name in known})

    def parameters(self) -> dict[str, Any]:
        """Its fields as plain data for a record (the certificate's counterexample): a long
        sequence (the 2^24 + 1 weights of a numeric edge) as runs of equal values,
        ``{"runs": [[value, count], ...]}``, which a few runs keep exact and small."""
        return {field.name: _compact(getattr(self, field.name)) for field in fields(self)}

    def sizes(self) -> dict[str, int]:
        """Its sizes among SIZE_FIELDS, those it has (an epoch never set has none)."""
        return {name: value for name in SIZE_FIELDS if isinstance(value := getattr(self, name, None), int)}


def largest_sizes(*sizes: dict[str, int]) -> dict[str, int]:
    """Each size's largest value among ``sizes`` (``Case.sizes``)."""
    merged: dict[str, int] = {}
    for each in sizes:
        for name, value in each.items():
            merged[name] = max(value, merged.get(name, value))
    return merged


CaseT = TypeVar("CaseT", bound=Case)


@dataclass(frozen=True)
class Observation(Generic[CaseT]):
    """What every rank yielded for one case: indices and ``len(sampler)`` per rank.

    For a batch sampler ``len()`` counts batches, and ``batches`` keeps them apart.
    """

    case: CaseT  # the subject's own case
    indices: tuple[np.ndarray, ...]  # per rank; a batch sampler's batches concatenated
    reported_lengths: tuple[ReportedLength, ...]  # len(sampler) after the pass, or why there is none
    batches: tuple[tuple[np.ndarray, ...], ...] | None = None  # per rank, for batch samplers
    # len(sampler) before the pass (after set_epoch), as a training loop sizes its schedule; None: not asked
    lengths_before: tuple[ReportedLength, ...] | None = None
    # The ranks read, where a partial reading read only some (indices[i] is rank ranks[i]'s):
    # at N = 2^31 on 16,384 ranks, the first, the last and those padding lands on. None:
    # every rank, in rank order.
    ranks: tuple[int, ...] | None = None

    def rank_of(self, position: int) -> int:
        """The rank whose reading is ``indices[position]``."""
        return position if self.ranks is None else self.ranks[position]

    @property
    def partial(self) -> bool:
        return self.ranks is not None

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
