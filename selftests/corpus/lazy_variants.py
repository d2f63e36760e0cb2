"""Variants of the lazy reference (``adapters/lazy_permutation.py``), cheap to read at the
numeric edges, for the selftests of what ``--scale`` judges there. Not catalogued known-bads:
their bugs show at every size, and the selftests read only their edges."""

from __future__ import annotations

from sampler_conformance.adapters.lazy_permutation import LazyDistributedSampler


class LazyIgnoresEpoch(LazyDistributedSampler):
    """set_epoch() does nothing: every epoch repeats the first one's order."""

    def set_epoch(self, epoch: int) -> None:
        pass
