"""Reading what a sampler yields, for every subject that reads indices: each item checked to
be an int index (the first offending one reported), batches checked to be lists of them, and
``len()`` asked before a pass and after it, of a sampler that defines ``__len__``: torch's
Sampler does not require one. A ``len()`` that raises is recorded, not raised: it breaks the
length invariant alone, and what the pass yielded is judged by the others.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

import numpy as np
import torch

from sampler_conformance.core.case import LenRaised, NoLen, ReportedLength
from sampler_conformance.core.evidence import FAULT
from sampler_conformance.execution.scenario import BadItems, StepFailed

T = TypeVar("T")


class Guard(Protocol):
    """Runs one call into the sampler, ``guard(step, call)``, and turns what it raises into
    the caller's own failure."""

    def __call__(self, step: str, call: Callable[[], T], /) -> T: ...


_INT64_MAX = np.iinfo(np.int64).max


class BadIndex(BadItems):
    """An item that is not an int index, or more items than the bound allows."""

    flag = "valid_indices"


def lens_around(sampler: Any, guard: Guard, read: Callable[[], T]) -> tuple[T, ReportedLength, ReportedLength]:
    """``read()``, one pass of ``sampler``, with ``len(sampler)`` asked before it (after
    ``set_epoch``, where a training loop sizes its epoch) and after it: what ``read()``
    returned, the len() before, the len() after. Every subject's length check compares both."""
    before = reported_len(sampler, "in __len__, before the pass", guard)
    result = read()
    return result, before, reported_len(sampler, "in __len__", guard)


def has_len(sampler: Any) -> bool:
    """Whether ``len(sampler)`` has a ``__len__`` to call. Looked up on the type, as ``len()``
    does; ``__len__ = None`` is Python's way of saying there is none."""
    return callable(getattr(type(sampler), "__len__", None))


def reported_len(sized: Any, step: str, guard: Guard, sampler: Any = None) -> ReportedLength:
    """``len(sized)`` through ``guard``, or :attr:`NoLen.UNDEFINED` when ``sampler``, whose
    ``len()`` that asks (``sized`` itself unless given: a BatchSampler or a DataLoader wraps
    it), defines no ``__len__``. A ``__len__`` that raises gives :class:`LenRaised`: the
    length invariant's to charge, and no reason to throw away the pass that was read."""
    if not has_len(sized if sampler is None else sampler):
        return NoLen.UNDEFINED
    try:
        return guard(step, lambda: int(len(sized)))
    except StepFailed as failed:
        if failed.flag != FAULT:
            raise
        return LenRaised(failed.summary)


def read_limit(dataset_size: int) -> int:
    """How many indices one rank may yield before it counts as never stopping.

    Generous: the contracts here yield at most ceil(N/W) per rank; four times the
    dataset leaves room for repeat-style samplers without reading forever. A kind whose
    rank may yield more than N (draws, Poisson steps) passes its own most.
    """
    return 4 * dataset_size + 64


def batch_arrays(batches: list[Any]) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """Every batch's items as one int64 array, and each batch as a view of it;
    :class:`BadIndex` for a batch that is not a list of indices (:func:`as_batch`). The
    batches are checked and converted together, as one list (one array per batch costs as
    much as its items for the small batches of a long pass)."""
    batches = [as_batch(batch, position) for position, batch in enumerate(batches)]
    try:
        together = as_index_array([item for batch in batches for item in batch])
    except BadIndex:
        for batch in batches:  # the error again, with the position in its own batch
            as_index_array(list(batch))
        raise
    return together, cut(together, [len(batch) for batch in batches])


def batch_array(batch: Any, position: int) -> np.ndarray:
    """One batch's items as an int64 array, checked as :func:`batch_arrays` checks it (for a
    batch read on its own: cutting a one-batch list costs more than converting it)."""
    return as_index_array(as_batch(batch, position))


def as_batch(batch: Any, position: int) -> list[Any]:
    """What a batch must be, for every subject that yields batches: a list or tuple of
    indices, or a one-dimensional tensor or array of integers, whose elements a DataLoader
    indexes the dataset with as it does a list's (opacus' samplers yield them; docs/contracts.md,
    "What a batch is"). :class:`BadIndex` for anything else."""
    if isinstance(batch, (list, tuple)):
        return list(batch)
    if _is_integer_vector(batch):
        return batch.tolist()
    raise BadIndex(
        f"yielded {_kind(batch)} {batch!r} as batch {position}; a batch is a list of indices, or a 1-D integer tensor"
    )


def _is_integer_vector(batch: Any) -> bool:
    if isinstance(batch, np.ndarray):
        return batch.ndim == 1 and np.issubdtype(batch.dtype, np.integer)
    if isinstance(batch, torch.Tensor):
        return batch.ndim == 1 and not (batch.is_floating_point() or batch.is_complex() or batch.dtype == torch.bool)
    return False


def batch_sizes(batches: Sequence[np.ndarray]) -> np.ndarray:
    """How many items each batch has. A rank sends its batches as their items concatenated and
    these sizes, cut apart again where they arrive (:func:`cut`): each small array pickles at a
    cost of its own, and a pass of 10,000 batches took 0.2 s to send."""
    return np.fromiter(map(len, batches), np.int64, len(batches))


def cut(items: np.ndarray, sizes: Sequence[int] | np.ndarray) -> tuple[np.ndarray, ...]:
    """``items`` cut into consecutive batches of ``sizes`` (views of it); none for no sizes."""
    ends = np.cumsum(sizes).tolist()
    # Slices: np.split takes 4 times as long for 10,000 one-item batches.
    return tuple(items[start:end] for start, end in zip([0, *ends], ends, strict=False))


def as_index_array(items: list[Any]) -> np.ndarray:
    kinds = set(map(type, items))
    if not kinds <= {int} and not all(issubclass(k, (int, np.integer)) and k is not bool for k in kinds):
        position, item = next((i, x) for i, x in enumerate(items) if not _is_int_index(x))
        raise BadIndex(
            f"yielded {_kind(item)} {item!r} at position {position}; indices must be Python ints "
            f"(call int() or .tolist() on tensors and numpy values)"
        )
    try:
        return np.array(items, dtype=np.int64)
    except OverflowError:
        position, item = next((i, x) for i, x in enumerate(items) if abs(int(x)) > _INT64_MAX)
        raise BadIndex(f"yielded {item} at position {position}, far outside any dataset") from None


def _is_int_index(item: Any) -> bool:
    return isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_))


def _kind(item: Any) -> str:
    module = type(item).__module__
    name = type(item).__qualname__
    full = name if module == "builtins" else f"{module}.{name}"
    return f"a {full}"
