"""The elastic invariants, as pure functions over an elastic run (``harness.subjects.index_sampler.runs``).

The ranks of the contracts ``elastic`` composes with take turns through one global order:
rank r takes units r, r+W, ... (a unit is an index, or a batch for a batch sampler). So
what the ranks of a leg consumed together is the next stretch of that order, the global
cursor is how many units were consumed in all, and the ranks of the last leg, interleaved
the same way, must go on with exactly the rest of the order, then padding (or a dropped
tail, with drop_last) of fewer units than they are ranks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from sampler_conformance.core.case import Observation
from sampler_conformance.core.comparing import first_difference
from sampler_conformance.core.counting import index_counts
from sampler_conformance.core.evidence import PropertyFailure, Violation, raise_evidence, shorten
from sampler_conformance.core.invariants import Declared, Invariant

from .case import IndexCase
from .checks import ELASTIC_BAD, ELASTIC_UNDER
from .contracts import ELASTIC
from .resume_checks import counts_agree, items, missing_protocol
from .runs import ElasticRun

# The invariants checked here, each by a check of its own (harness.core.invariants.Declared).
DECLARED = Declared()

Unit = int | tuple[int, ...]


def units(observation: Observation[IndexCase]) -> list[list[Unit]]:
    """Each rank's units in the order it yielded them: indices, or batches as tuples."""
    if observation.batches is not None:
        return [[tuple(int(i) for i in batch) for batch in batches] for batches in observation.batches]
    return [[int(i) for i in indices] for indices in observation.indices]


def interleaved(shares: Sequence[Sequence[Unit]]) -> list[Unit]:
    """The global order the ranks took turns through: unit i of rank r at position i*W + r."""
    longest = max(map(len, shares), default=0)
    return [share[i] for i in range(longest) for share in shares if i < len(share)]


def epoch_order(run: ElasticRun, undropped: bool = False) -> list[Unit]:
    """The epoch's global order on the first leg's world size, its padding cut off (or,
    ``undropped``, the whole order: what drop_last cut off on that world size too)."""
    observation = run.undropped if undropped else run.uninterrupted
    order = interleaved(units(observation))
    case = observation.case
    if observation.batches is not None:
        rounding = math.floor if case.drop_last else math.ceil
        distinct = rounding(case.dataset_size / case.batch_size)
    else:
        distinct = case.dataset_size
    return order[:distinct]


def _indices(sequence: Sequence[Unit]) -> set[int]:
    return {index for unit in sequence for index in (unit if isinstance(unit, tuple) else (unit,))}


def cursor(run: ElasticRun, order_length: int) -> int:
    """Units consumed before the last leg, all ranks of every leg together (at most the whole order)."""
    return min(order_length, sum(sum(observation.lengths) for observation in run.consumed))


def _show(sequence: Sequence[Unit]) -> str:
    if sequence and isinstance(sequence[0], tuple):
        shown = ", ".join(str(list(unit)) for unit in sequence[:8])  # type: ignore[arg-type]  # batches are tuples
        return f"[{shown}{', ...' if len(sequence) > 8 else ''}]"
    return shorten(np.asarray(sequence, dtype=np.int64))


def check_global_cursor(flag: str, run: ElasticRun) -> list[Violation]:
    """E1 (and E4 for a chain of legs): the last leg's ranks, interleaved, yield exactly the
    rest of the epoch's global order after the cursor, then fewer padding units than they
    are ranks, made of the epoch's indices. With drop_last: a prefix of the rest of the
    whole (undropped) order, short of the epoch's rest on W ranks by fewer units than they
    are ranks."""
    order = epoch_order(run)
    at = cursor(run, len(order))
    rest, got = order[at:], interleaved(units(run.rest))
    world = run.world_sizes[-1]
    what = f"{run.describe()}, the new ranks together (unit i of rank r at i*W + r)"
    expected = f"the rest of the epoch's global order after its first {items(at)}"
    drop_last = run.rest.case.drop_last
    if drop_last:
        # The tail a drop cuts depends on the world size: the new ranks may drop fewer than W'
        # units of the epoch's rest on W ranks, or of the whole order's rest.
        whole_rest = epoch_order(run, undropped=True)[at:]
        strays = got != whole_rest[: len(got)]
        if strays or len(got) < len(rest) - (world - 1):
            where = f"; {first_difference(whole_rest, got, readings=('that whole rest', 'what they yield'))}"
            return [
                Violation(
                    flag,
                    f"{what} should yield {expected}, {_show(rest)} (with drop_last, the rest of the whole order "
                    f"{_show(whole_rest)} may go on, or a tail of fewer than W={world} be dropped), got {_show(got)}"
                    f"{where if strays else ''}",
                )
            ]
        return []
    if got[: len(rest)] != rest[: len(got)]:
        where = first_difference(rest, got, readings=("that rest", "what they yield"))
        return [Violation(flag, f"{what} should go on with {expected}, {_show(rest)}, got {_show(got)}; {where}")]
    if len(got) < len(rest):
        return [Violation(flag, f"{what} stop after {items(len(got))} of {expected}, {_show(rest)}")]
    padding = got[len(rest) :]
    allowed = -len(rest) % world
    if len(padding) > allowed:
        return [
            Violation(
                flag,
                f"{what} yield {expected}, {_show(rest)}, and then {items(len(padding))} more, {_show(padding)}, "
                f"where padding to a multiple of W={world} needs {allowed}",
            )
        ]
    # A batch sampler pads with new batches: what must come from the epoch is their indices.
    foreign = sorted(_indices(padding) - _indices(order))
    if foreign:
        return [Violation(flag, f"{what} pad the rest with indices the epoch does not hold: {foreign[:8]}")]
    return []


@DECLARED(
    Invariant(
        "elastic_exactly_once",
        "nothing repeated or lost across a change of world size",
        "a resume on more or fewer ranks that trains items twice or never in the epoch",
        f"{ELASTIC_BAD}:SkipsOwnCountOnNewWorld",
        proven_under=ELASTIC_UNDER,
        promised_by=(ELASTIC,),
    )
)
def check_exactly_once(run: ElasticRun) -> list[Violation]:
    """E2: across the change of world size, every index the uninterrupted epoch yields is
    yielded, and none more often, beyond the padding the last leg's world size needs. With
    drop_last there is no padding: no index twice, and only the tail of fewer than W' units
    a drop cuts may be lost."""
    case = run.uninterrupted.case
    unit_size = case.batch_size if run.uninterrupted.batches is not None else 1
    due = index_counts([run.uninterrupted], case.dataset_size)
    got = index_counts([*run.consumed, run.rest], case.dataset_size)
    order = epoch_order(run)
    rest_units = len(order) - cursor(run, len(order))
    world = run.world_sizes[-1]
    if run.rest.case.drop_last:
        allowed_lost, allowed_surplus, beyond = (world - 1) * unit_size, 0, np.ones_like(due)  # each index once
    else:
        allowed_lost, allowed_surplus, beyond = 0, (-rest_units % world) * unit_size, due
    lost = np.flatnonzero((due > 0) & (got == 0))
    surplus = int(np.clip(got - beyond, 0, None).sum())
    parts = []
    if surplus > allowed_surplus:
        repeated = np.flatnonzero(got > beyond)
        parts.append(f"repeat {items(surplus)} beyond the padding (at most {allowed_surplus}): {shorten(repeated)}")
    if lost.size > allowed_lost:
        parts.append(f"never yield {items(int(lost.size))} of the epoch: {shorten(lost)}")
    if not parts:
        return []
    return [Violation("elastic_exactly_once", f"{run.describe()}, the ranks together {' and '.join(parts)}")]


@DECLARED(
    Invariant(
        "elastic_ranks_agree",
        "equal remaining counts after a change of world size",
        "the rest of the epoch dealt out unevenly on the new ranks: one runs a step more and DDP hangs",
        f"{ELASTIC_BAD}:UnpaddedOnNewWorld",
        proven_under=ELASTIC_UNDER,
        promised_by=(ELASTIC,),
    )
)
def check_ranks_agree(run: ElasticRun) -> list[Violation]:
    """E3: the last leg's ranks hold as many units as each other (and, in a process group, as
    many batches of the case's batch size, all-reduced as DDP meets them)."""
    return counts_agree(
        "elastic_ranks_agree",
        run.rest,
        allowed=None,
        reduced_items=run.reduced_items,
        reduced_batches=run.reduced_batches,
        what=run.describe(),
    )


def expect_elastic(flag: str, run: ElasticRun, check: Callable[[ElasticRun], list[Violation]]) -> None:
    """Fail ``flag`` with what ``check`` finds in ``run`` (or with the missing Stateful
    protocol), showing the case the run began with and what the last leg's ranks yielded."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    violations = [missing_protocol(flag, run.missing)] if run.missing else check(run)
    if violations:
        raise_evidence(PropertyFailure, violations, run.uninterrupted.case, run.rest)
