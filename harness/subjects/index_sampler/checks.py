"""The per-epoch table (``PER_EPOCH``): the index sampler's invariants judged on one reading
of every rank, each declared on its check, from which their tests are generated; and its
judges, :func:`judge` (one invariant, as its own test judges it) and
:func:`structural_violations` (every one a contract promises).

Each check takes :class:`Observation` objects and returns a list of :class:`Violation`
(empty when the invariant holds). They are vectorised with numpy so that checking ten
million indices costs less than producing them, and they are the only implementation: the
in-process properties and the real process groups both call them. They lie in a module by
promise, which ``invariants.py`` imports in the table's order: ``length_checks.py`` (each
rank's length), ``partition_checks.py`` (valid indices, coverage, disjointness),
``layout_checks.py`` (the global order the shares are cut from), ``batch_checks.py`` (whole
batches, or batches of the rank's share), ``group_checks.py`` (repeated and label groups) and
``aspect_checks.py`` (aspect buckets). The order invariants across passes and processes are in
``order_checks.py``, the batch counts and the DataLoader's in ``loader_checks.py``.
"""

from __future__ import annotations

from collections.abc import Callable

from sampler_conformance.core.case import Observation
from sampler_conformance.core.evidence import Violation
from sampler_conformance.core.invariants import OneEpoch

from .case import IndexCase
from .contracts import SamplerContract

# Where the known-bad samplers that prove the invariants can fail live (selftests/corpus/),
# and the contracts the extensions' are certified under.
KNOWN_BAD = "selftests.corpus.known_bad"
FAMILIES = "selftests.corpus.families"
MULTIPROCESS_BAD = "selftests.corpus.multiprocess_bad"
RESUME_BAD = "selftests.corpus.resume_bad"
RESUMABLE_UNDER = "torch+resumable"
ELASTIC_BAD = "selftests.corpus.elastic_bad"
ELASTIC_UNDER = "torch+elastic"

# A per-epoch judge: the reading of every rank, the contract, the one-rank reading (None unless
# the invariant is declared against_one_rank).
Judge = Callable[[Observation[IndexCase], SamplerContract, Observation[IndexCase] | None], list[Violation]]

# Every per-epoch invariant, declared on its check in the module of its promise, in the registry's order.
PER_EPOCH: OneEpoch[Judge] = OneEpoch()


def required(one_rank: Observation[IndexCase] | None) -> Observation[IndexCase]:
    """The one-rank reading a check declared ``against_one_rank`` is judged against."""
    if one_rank is None:
        raise TypeError("this invariant is judged against the one-rank reading; pass it")
    return one_rank


UNEVEN_STEPS_HANG = "the rank with more batches waits in a collective the others never join, and DDP hangs"


def missing_len(contract: SamplerContract) -> Violation:
    """The one violation a sampler without ``__len__`` gets: under len_matches_iter, where the
    contract promises len(). The same on every case, so the summary shows it once."""
    unit = "batches" if contract.yields_batches else "indices"
    return Violation(
        "len_matches_iter",
        f"the sampler defines no __len__, so len(sampler) raises TypeError; contract {contract.name!r} requires "
        f"it, as a DataLoader's len(), LR schedules and progress bars call it. Define __len__ returning the "
        f"number of {unit} one pass yields on this rank",
        every_case=True,
    )


def judge(
    flag: str,
    observation: Observation[IndexCase],
    contract: SamplerContract,
    one_rank: Observation[IndexCase] | None = None,
) -> list[Violation]:
    """The per-epoch invariant ``flag`` (:data:`PER_EPOCH`) on one reading, as its own test
    judges it: the len_matches_iter tests charge a sampler without ``__len__``."""
    if flag == "len_matches_iter" and observation.lacks_len:
        return [missing_len(contract)]
    return PER_EPOCH[flag].judge(observation, contract, one_rank)


def structural_violations(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """Every per-epoch invariant the contract promises, on an observation of any case: those
    the case does not speak about are left out, and so are those judged against the
    one-rank reading unless it is given. A missing ``__len__`` is not charged here, in
    every test, but once, by :func:`judge` in the len_matches_iter tests."""
    violations: list[Violation] = []
    for per_epoch in PER_EPOCH:
        if not contract.promises(per_epoch.flag) or not per_epoch.applies(obs.case):
            continue
        if per_epoch.against_one_rank and one_rank is None:
            continue
        violations += per_epoch.judge(obs, contract, one_rank)
    return violations
