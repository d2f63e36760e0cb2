"""The streaming dataset's invariants: one record each (``harness.core.invariants.Invariant``).

Each names the known-bad dataset of ``selftests/corpus/streams_bad.py`` that reproduces the
bug it guards against; ``selftests/test_streams.py`` certifies each and asserts its exact
set of failed invariants. Those judged on one epoch of every rank are declared on their
checks (``checks.ONE_EPOCH``), those with a check of their own on it (``checks.DECLARED``, ``order_checks.DECLARED``,
``resume_checks.DECLARED``), the others, checked by a shared function or in their test's
body, here.
"""

from __future__ import annotations

from sampler_conformance.core.invariants import Invariant, Where

from . import checks, mix_checks, order_checks, resume_checks
from .checks import BAD, ONE_EPOCH, STREAM
from .contracts import READS_THROUGH_WORKERS

DECLARED: tuple[Invariant, ...] = (
    Invariant(
        "stream_runs",
        "the stream runs without crashing",
        "datasets that raise on empty or small layouts, in a worker, or when there are more workers than shards",
        f"{BAD}:RefusesEmpty",
        proven_under=STREAM,
        judged_from=0,  # an empty epoch can crash too
        promised_by=(READS_THROUGH_WORKERS,),
    ),
    *ONE_EPOCH.invariants,
    *checks.DECLARED.invariants,
    *order_checks.DECLARED.invariants,
    *mix_checks.DECLARED.invariants,
    Invariant(
        "epoch_reaches_workers",
        "set_epoch reaches persistent workers",
        "an epoch kept in a plain attribute of the main process's copy, which persistent workers never "
        "see (huggingface/datasets #6673, fixed in #6710)",
        f"{BAD}:EpochInAttribute",
        proven_under=STREAM,
        where=Where.GROUPS,
        needs=("shuffle",),
        judged_from=2,  # an order: one item cannot show it
        promised_by=(READS_THROUGH_WORKERS,),
    ),
    *resume_checks.DECLARED.invariants,
)
