"""Pull indices out of an index sampler, one pass or part of one: bounded, and checked to be
ints (``sampler_conformance.subjects.common.reading``).

Used by the in-process runner and inside rank processes alike. A sampler that never stops
is read up to a bound and reported; one that yields tensors, floats or bools is reported
with the first offending item. ``len()`` is asked before a pass and after it (a training
loop sizes its epoch from it first).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any

import numpy as np

from sampler_conformance.core.case import NoLen, Observation, ReportedLength
from sampler_conformance.subjects.common.reading import (
    BadIndex,
    Guard,
    as_index_array,
    batch_arrays,
    batch_sizes,
    cut,
    lens_around,
    read_limit,
)

from .case import IndexCase
from .contracts import SamplerContract


@dataclass(frozen=True)
class Reading:
    """One iteration of one sampler on one rank."""

    indices: np.ndarray  # a batch sampler's batches concatenated
    length: ReportedLength  # len(sampler) after the pass, or why there is none
    batches: tuple[np.ndarray, ...] | None = None  # a batch sampler's batches
    length_before: ReportedLength = NoLen.NOT_ASKED  # len(sampler) before the pass

    def __reduce__(self) -> tuple[Any, ...]:
        """Sent from a rank to the controller as its indices and its batches' sizes (``batch_sizes``)."""
        sizes = None if self.batches is None else batch_sizes(self.batches)
        return (_cut_into_batches, (self.indices, self.length, sizes, self.length_before))


def _cut_into_batches(
    indices: np.ndarray, length: ReportedLength, sizes: np.ndarray | None, length_before: ReportedLength
) -> Reading:
    """A :class:`Reading` unpickled: its batches cut from its indices again."""
    return Reading(indices, length, None if sizes is None else cut(indices, sizes), length_before)


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
            return guard("while iterating", lambda: read_batches(sampler, limit))
        return guard("while iterating", lambda: read_indices(sampler, limit)), None

    (indices, batches), before, after = lens_around(sampler, guard, one_pass)
    return Reading(indices, after, batches, before)


def observation_of(
    case: IndexCase, readings: list[Reading], contract: SamplerContract, ranks: tuple[int, ...] | None = None
) -> Observation[IndexCase]:
    """The ranks' readings of one pass (rank order) as one Observation of ``case``: of every
    rank, or of ``ranks`` only (a partial reading)."""
    batches = tuple(r.batches or () for r in readings) if contract.yields_batches else None
    lengths = tuple(r.length for r in readings)
    return Observation(
        case, tuple(r.indices for r in readings), lengths, batches, tuple(r.length_before for r in readings), ranks
    )


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


def read_batches(sampler: Iterable[Any], limit: int) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """Iterate a batch sampler once: each batch must be a list (or tuple) of int indices.
    Its items, one after another, and its batches (:func:`batch_arrays`)."""
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
        indices, batches = batch_arrays(items)
        return Reading(indices, NoLen.NOT_ASKED, batches)
    return Reading(as_index_array(items), NoLen.NOT_ASKED)
