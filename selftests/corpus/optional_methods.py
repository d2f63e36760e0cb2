"""Samplers without ``__len__``, which torch's ``Sampler`` leaves optional.

torch's ``Sampler`` requires ``__iter__`` only, and bucketing samplers (lhotse's) define no
``__len__``. Such a sampler must be judged on everything that does not need ``len()``, and
charged once, under ``len_matches_iter``, where a contract promises ``len()``
(``selftests/test_optional_methods.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from torch.utils.data import DistributedSampler, Sampler

from sampler_conformance.adapters.budget_batches import TokenBudgetBatchSampler


class WithoutLen(Sampler[int]):
    """torch's DistributedSampler behind a wrapper that forwards its arguments, ``__iter__``
    and ``set_epoch``, but defines no ``__len__``: right in every other respect."""

    def __init__(self, dataset: Any, **options: Any) -> None:
        self.inner: DistributedSampler[int] = DistributedSampler(dataset, **options)

    def __iter__(self) -> Iterator[int]:
        return iter(self.inner)

    def set_epoch(self, epoch: int) -> None:
        self.inner.set_epoch(epoch)


class LenFromBaseWithoutLen(WithoutLen):
    """A ``__len__`` that exists and raises: a subclass defers it to its base class, which
    has none, so ``len()`` raises AttributeError from the sampler's own code. A crash like
    any other, charged to edge_sizes; not a missing ``__len__``."""

    def __len__(self) -> int:
        return super().__len__()  # type: ignore[misc]  # the bug: WithoutLen defines no __len__


class BudgetBatchesWithoutLen(TokenBudgetBatchSampler):
    """The dynamic_batches reference without ``__len__``, as lhotse's samplers are: the
    contract makes ``len()`` optional, so batch_len_matches is not promised to it and it
    conforms."""

    __len__ = None  # type: ignore[assignment]  # Python's way of saying there is none
