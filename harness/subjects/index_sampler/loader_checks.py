"""The batch and DataLoader invariants, as pure functions: every rank counts the same batches,
and the loader yields what its sampler yields."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sampler_conformance.core.case import ReportedLength
from sampler_conformance.core.comparing import first_difference
from sampler_conformance.core.evidence import Violation, shorten
from sampler_conformance.core.invariants import Declared, Invariant, Where

from .checks import KNOWN_BAD, MULTIPROCESS_BAD, UNEVEN_STEPS_HANG
from .contracts import EQUAL_BATCHES, FINITE_EPOCHS
from .runs import LoaderEpochRun

# The invariants checked here, each by a check of its own (harness.core.invariants.Declared).
DECLARED = Declared()


@DECLARED(
    Invariant(
        "equal_batches",
        "equal batch counts",
        "uneven batch counts per rank: DDP hangs",
        f"{KNOWN_BAD}:UnpaddedStrided",
        promised_by=(EQUAL_BATCHES,),
    )
)
def check_equal_batch_counts(batch_counts: Sequence[int], batch_lengths: Sequence[ReportedLength]) -> list[Violation]:
    """The ranks count the same batches, and a len() of the batches (BatchSampler's, the
    DataLoader's) where the sampler has one says the same on every rank."""
    violations = []
    if len(set(batch_counts)) > 1:
        violations.append(
            Violation(
                "equal_batches",
                f"ranks get different numbers of batches {batch_counts}: {UNEVEN_STEPS_HANG}",
            )
        )
    reported = [length for length in batch_lengths if isinstance(length, int)]
    if len(set(reported)) > 1:
        violations.append(Violation("equal_batches", f"len(BatchSampler) differs across ranks: {reported}"))
    return violations


@DECLARED(
    Invariant(
        "loader_yields_sampler",
        "DataLoader yields the sampler's indices",
        "samplers whose DataLoader batches differ from what they yield",
        f"{MULTIPROCESS_BAD}:SeedsGlobalRNGInSetEpoch",
        where=Where.GROUPS,
        promised_by=(FINITE_EPOCHS,),
    )
)
def check_loader_yields_sampler(
    rank: int, sampler_indices: np.ndarray, batches: Sequence[np.ndarray], batch_size: int | None, drop_last: bool
) -> list[Violation]:
    """The DataLoader's batches, concatenated, are what the sampler yields (cut to whole batches
    with drop_last), and every batch but the last holds ``batch_size`` items."""
    expected = sampler_indices
    if batch_size is not None and drop_last:
        expected = expected[: len(expected) // batch_size * batch_size]
    got = np.concatenate(batches) if len(batches) else np.empty(0, dtype=np.int64)
    if not np.array_equal(got, expected):
        where = first_difference(expected, got, readings=("the sampler's indices", "the batches"))
        return [
            Violation(
                "loader_yields_sampler",
                f"rank {rank}: the DataLoader's batches should hold the sampler's indices {shorten(expected)} in "
                f"order{' cut to whole batches (drop_last)' if drop_last else ''}, got {shorten(got)}; {where}",
            )
        ]
    sizes = [len(b) for b in batches]
    if batch_size is not None and any(size != batch_size for size in sizes[:-1]):
        return [
            Violation(
                "loader_yields_sampler",
                f"rank {rank}: every batch but the last should hold {batch_size} items, got sizes {sizes}",
            )
        ]
    return []


def loader_violations(run: LoaderEpochRun, batch_size: int | None, loader_drop_last: bool) -> list[Violation]:
    """Equal batch counts on every rank (as the all-reduce saw them), and the loader yields
    the sampler's indices. ``batch_size=None``: the sampler makes the batches itself."""
    counts = list(run.batch_counts)
    violations = check_equal_batch_counts(counts, list(run.loader_lengths))
    for rank, reduced in enumerate(run.reduced_counts):
        if list(reduced) != counts:
            violations.append(
                Violation(
                    "equal_batches",
                    f"rank {rank}: the all-reduce of the batch counts gave {list(reduced)}, but the ranks "
                    f"counted {counts}",
                )
            )
    for rank, (own, batches) in enumerate(zip(run.sampler.indices, run.batches, strict=True)):
        violations += check_loader_yields_sampler(rank, own, batches, batch_size, loader_drop_last)
    return violations
