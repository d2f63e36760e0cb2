"""Pull indices out of a sampler: bounded, and checked to be ints.

Used by the in-process runner and inside rank processes alike. A sampler that never
stops is read up to a bound and reported; one that yields tensors, floats or bools is
reported with the first offending item. ``len()`` is asked before a pass and after it (a
training loop sizes its epoch from it first), of a sampler that defines ``__len__``: torch's
Sampler does not require one. A ``len()`` that raises is recorded, not raised: it breaks the
length invariant alone, and what the pass yielded is judged by the others.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any, Protocol, TypeVar

import numpy as np

from sampler_conformance.core.case import Case, LenRaised, NoLen, Observation, ReportedLength
from sampler_conformance.core.evidence import FAULT
from sampler_conformance.execution.scenario import BadItems, StepFailed

from .contracts import SamplerContract

T = TypeVar("T")


class Guard(Protocol):
    """Runs one call into the sampler, ``guard(step, call)``, and turns what it raises into
    the caller's own failure."""

    def __call__(self, step: str, call: Callable[[], T], /) -> T: ...


_INT64_MAX = np.iinfo(np.int64).max


class BadIndex(BadItems):
    """An item that is not an int index, or more items than the bound allows."""

    flag = "valid_indices"


@dataclass(frozen=True)
class Reading:
    """One iteration of one sampler on one rank."""

    indices: np.ndarray  # a batch sampler's batches concatenated
    length: ReportedLength  # len(sampler) after the pass, or why there is none
    batches: tuple[np.ndarray, ...] | None = None  # a batch sampler's batches
    length_before: ReportedLength = NoLen.NOT_ASKED  # len(sampler) before the pass


def read_pass(
    sampler: Any,
    contract: SamplerContract,
    dataset_size: int,
    world_size: int,
    guard: Guard,
) -> Reading:
    """One pass as ``contract`` says: the whole of a finite sampler, a prefix of an endless
    one; indices or batches; then ``len()``, if the sampler defines it. ``guard(step, call)``
    runs each call into the sampler and turns what it raises into the caller's own failure."""
    if not contract.finite:
        count = contract.prefix_length(dataset_size, world_size)
        return Reading(guard("while iterating", lambda: read_prefix(sampler, count)), NoLen.ENDLESS)
    limit = read_limit(dataset_size)

    def one_pass() -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        if contract.yields_batches:
            batches = guard("while iterating", lambda: read_batches(sampler, limit))
            return (np.concatenate(batches) if batches else np.empty(0, dtype=np.int64)), batches
        return guard("while iterating", lambda: read_indices(sampler, limit)), None

    (indices, batches), before, after = lens_around(sampler, guard, one_pass)
    return Reading(indices, after, batches, before)


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


def observation_of(case: Case, readings: list[Reading], contract: SamplerContract) -> Observation:
    """The ranks' readings of one pass (rank order) as one Observation of ``case``."""
    batches = tuple(r.batches or () for r in readings) if contract.yields_batches else None
    lengths = tuple(r.length for r in readings)
    return Observation(
        case, tuple(r.indices for r in readings), lengths, batches, tuple(r.length_before for r in readings)
    )


def read_limit(dataset_size: int) -> int:
    """How many indices one rank may yield before it counts as never stopping.

    Generous: the contracts here yield at most ceil(N/W) per rank; four times the
    dataset leaves room for repeat-style samplers without reading forever.
    """
    return 4 * dataset_size + 64


def read_indices(sampler: Iterable[Any], limit: int) -> np.ndarray:
    """Iterate ``sampler`` once and return its indices as int64; raise :class:`BadIndex`."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    items = list(islice(iter(sampler), limit + 1))
    if len(items) > limit:
        raise BadIndex(
            f"yielded more than {limit} indices without stopping: the sampler never stops "
            f"(a finite sampler must end after one pass)"
        )
    return as_index_array(items)


def read_prefix(sampler: Iterable[Any], count: int) -> np.ndarray:
    """The first ``count`` indices of an endless sampler."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    items = list(islice(iter(sampler), count))
    if len(items) < count:
        raise BadIndex(f"stopped after {len(items)} indices, but an infinite sampler must never stop (read {count})")
    return as_index_array(items)


def read_batches(sampler: Iterable[Any], limit: int) -> tuple[np.ndarray, ...]:
    """Iterate a batch sampler once: each batch must be a list (or tuple) of int indices."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    batches = list(islice(iter(sampler), limit + 1))
    if len(batches) > limit:
        raise BadIndex(f"yielded more than {limit} batches without stopping: the batch sampler never stops")
    return batch_arrays(batches)


def take(iterator: Iterator[Any], count: int, contract: SamplerContract) -> Reading:
    """The next ``count`` items of a running pass (fewer if it ends first), checked as
    :func:`read_pass` checks a whole pass; ``len()`` is not asked of part of a pass."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    items = list(islice(iterator, count))
    if contract.yields_batches:
        batches = batch_arrays(items)
        return Reading(np.concatenate(batches) if batches else np.empty(0, dtype=np.int64), NoLen.NOT_ASKED, batches)
    return Reading(as_index_array(items), NoLen.NOT_ASKED)


def batch_arrays(batches: list[Any]) -> tuple[np.ndarray, ...]:
    """Each batch as an int64 array; :class:`BadIndex` for one that is not a list of indices."""
    arrays = []
    for position, batch in enumerate(batches):
        if not isinstance(batch, (list, tuple)):
            raise BadIndex(
                f"yielded {_kind(batch)} {batch!r} as batch {position}; a batch sampler yields lists of indices"
            )
        arrays.append(as_index_array(list(batch)))
    return tuple(arrays)


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
