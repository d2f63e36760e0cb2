"""The weighted sampler's invariants: one record each (``harness.core.invariants.Invariant``).

Each names the known-bad sampler of ``selftests/corpus/weighted_bad.py`` that reproduces the
bug it guards against; ``selftests/test_weighted.py`` certifies each and asserts its exact
set of failed invariants. Those judged on one epoch of every rank are declared on their
checks (``checks.ONE_EPOCH``), those with a check of their own on it (``checks.DECLARED``),
the others, checked by a shared function or in their test's body, here.
"""

from __future__ import annotations

from sampler_conformance.core.invariants import Invariant, Where

from . import checks
from .checks import BAD, ONE_EPOCH, WEIGHTED
from .contracts import SEEDED_BY_EPOCH, WEIGHTED_DRAWS


def _declared(flag: str, title: str, guards: str, bad: str, where: Where = Where.IN_PROCESS, **more) -> Invariant:
    return Invariant(flag, title, guards, f"{BAD}:{bad}", proven_under=WEIGHTED, where=where, **more)


DECLARED: tuple[Invariant, ...] = (
    _declared(
        "weighted_runs",
        "the sampler runs without crashing",
        "samplers that raise on few items, many draws or zero weights (torch.multinomial without replacement "
        "refuses more draws than items)",
        "WithoutReplacement",
        judged_from=0,  # an empty epoch can crash too
        promised_by=(WEIGHTED_DRAWS,),
    ),
    *ONE_EPOCH.invariants,
    *checks.DECLARED.invariants,
    _declared(
        "weighted_deterministic",
        "the same stream for the same seed and epoch",
        "draws from the process's global generator (MONAI's DistributedWeightedRandomSampler with its default "
        "generator=None), or from a generator that carries over from epoch to epoch: a run cannot be reproduced, "
        "nor resumed at an epoch with the stream the uninterrupted run drew",
        "GlobalGenerator",
        needs=("seed",),
        judged_from=2,  # an order: one item cannot show it
        promised_by=(SEEDED_BY_EPOCH,),
    ),
    _declared(
        "weighted_reshuffles",
        "a new stream after set_epoch",
        "the epoch never reaching the sampler that draws (Lightning-AI/pytorch-lightning #21454: "
        "DistributedSamplerWrapper does not pass set_epoch on)",
        "EpochNotPassedOn",
        judged_from=2,  # an order: one item cannot show it
        promised_by=(SEEDED_BY_EPOCH,),
    ),
    _declared(
        "weighted_seed_effective",
        "another seed, another stream",
        "the seed never reaching the generator (huggingface/transformers #11406: always seed 0)",
        "SeedIgnored",
        needs=("seed",),
        judged_from=2,  # an order: one item cannot show it
        promised_by=(SEEDED_BY_EPOCH,),
    ),
)
