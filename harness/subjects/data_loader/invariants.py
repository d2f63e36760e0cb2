"""The data loader's invariants: one record each (``harness.core.invariants.Invariant``).

Each names the known-bad loader of ``selftests/corpus/loader_bad.py`` that reproduces the bug
it guards against; ``selftests/test_loaders.py`` certifies each and asserts its exact set of
failed invariants. Those judged on one epoch of every rank are declared on their checks
(``checks.ONE_EPOCH``), those with a check of their own on it (``checks.DECLARED``), the
others, checked by a shared function or in their test's body, here.
"""

from __future__ import annotations

from sampler_conformance.core.invariants import Invariant

from . import checks, resume_checks
from .checks import BAD, DATA_LOADER, EVERYWHERE, ONE_EPOCH
from .contracts import LOADER_RUNS, SEED_AND_EPOCH


def _declared(flag: str, title: str, guards: str, bad: str, **more) -> Invariant:
    return Invariant(flag, title, guards, f"{BAD}:{bad}", proven_under=DATA_LOADER, where=EVERYWHERE, **more)


DECLARED: tuple[Invariant, ...] = (
    _declared(
        "loader_runs",
        "the loader runs without crashing",
        "loaders that raise on an epoch with no whole global batch (fewer instances than a global batch), or on "
        "more ranks than instances",
        "RefusesShortEpoch",
        judged_from=0,  # an empty epoch can crash too
        promised_by=(LOADER_RUNS,),
    ),
    *ONE_EPOCH.invariants,
    _declared(
        "loader_deterministic",
        "the same batches for the same seed and epoch",
        "a generator made once and carried from epoch to epoch: a run resumed at epoch e, or the script run again, "
        "reads other batches",
        "GeneratorCarriedOver",
        needs=("seed",),
        judged_from=2,  # an order: one instance cannot show it
        promised_by=(SEED_AND_EPOCH,),
    ),
    _declared(
        "loader_reshuffles",
        "other batches after the epoch hook",
        "an epoch hook (reshuffle or set_epoch) that never reaches the loader's order: every epoch the same "
        "batches in the same order",
        "EpochHookIgnored",
        judged_from=2,  # an order: one instance cannot show it
        promised_by=(SEED_AND_EPOCH,),
    ),
    *checks.DECLARED.invariants,
    *resume_checks.DECLARED.invariants,
)
