"""The batch sampler's invariants: one record each (``harness.core.invariants.Invariant``).

Each names the known-bad sampler of ``selftests/corpus/batch_bad.py`` that reproduces the
bug it guards against; ``selftests/test_batches.py`` certifies each and asserts its exact
set of failed invariants. Those judged on one epoch of every rank are declared on their
checks (``checks.ONE_EPOCH``), those with a check of their own on it (``checks.DECLARED``),
the others, checked by a shared function or in their test's body, here.
"""

from __future__ import annotations

from sampler_conformance.core.invariants import Invariant, Where

from . import checks
from .checks import BAD, DYNAMIC_BATCHES, ONE_EPOCH
from .contracts import BATCHES_RESHUFFLE, BATCHES_RUN, REPRODUCIBLE_PLAN


def _declared(flag: str, title: str, guards: str, bad: str, *, under: str = DYNAMIC_BATCHES, **more) -> Invariant:
    return Invariant(flag, title, guards, f"{BAD}:{bad}", proven_under=under, **more)


DECLARED: tuple[Invariant, ...] = (
    _declared(
        "batches_run",
        "the sampler runs without crashing",
        "samplers that raise on an empty dataset, on more ranks than batches, or on an item longer than the budget",
        "RefusesLongItem",
        where=Where.BOTH,  # in groups for a sampler that rebalances inside one (needs_process_group)
        judged_from=0,  # an empty epoch can crash too
        promised_by=(BATCHES_RUN,),
    ),
    *ONE_EPOCH.invariants,
    *checks.DECLARED.invariants,
    _declared(
        "batches_deterministic",
        "the same batches for the same seed and epoch",
        "a generator made once and carried over from epoch to epoch, so that a run resumed at epoch e, or the "
        "script run again, plans other batches",
        "GeneratorCarriedOver",
        needs=("seed",),
        where=Where.BOTH,  # in groups for a sampler that rebalances inside one (needs_process_group)
        judged_from=2,  # an order: one item cannot show it
        promised_by=(REPRODUCIBLE_PLAN,),
    ),
    _declared(
        "batches_reshuffle",
        "other batches after set_epoch",
        "the epoch never reaching the sampler's generator: every epoch the same batches in the same order",
        "EpochIgnored",
        where=Where.BOTH,  # in groups for a sampler that rebalances inside one (needs_process_group)
        judged_from=2,  # an order: one item cannot show it
        promised_by=(BATCHES_RESHUFFLE,),
    ),
)
