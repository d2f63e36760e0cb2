"""The resumable invariants, as pure functions over a resumed run and the uninterrupted one.

Each takes a :class:`ResumeRun` (``harness.subjects.index_sampler.runs``), the Observations
of ``scenarios/resume.py``, and returns the violations (empty when the invariant holds),
with the rank, the epoch, the cut and the first item where the resumed run leaves the
uninterrupted one.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sampler_conformance.core import evidence
from sampler_conformance.core.case import Observation
from sampler_conformance.core.comparing import first_difference
from sampler_conformance.core.counting import batch_count, index_counts
from sampler_conformance.core.evidence import Violation, expect_holds, shorten
from sampler_conformance.core.invariants import Declared, Invariant, Where

from .case import IndexCase
from .checks import RESUMABLE_UNDER, RESUME_BAD, UNEVEN_STEPS_HANG
from .contracts import ELASTIC, RESUMABLE
from .runs import ResumeRun

# The invariants checked here, each by a check of its own (harness.core.invariants.Declared).
DECLARED = Declared()


def items(count: int) -> str:
    """``1 item``, ``3 items``."""
    return evidence.counted(count, "item")


def missing_protocol(flag: str, missing: Sequence[str]) -> Violation:
    """The one violation of a sampler without torch's Stateful protocol, for every resumable invariant."""
    return Violation(
        flag,
        f"the sampler has no {' and no '.join(f'{name}()' for name in missing)}, so no run can be resumed; "
        f"a resumable sampler has state_dict() and load_state_dict(state) (torch's Stateful protocol)",
    )


def expect_stateful(run: ResumeRun, flag: str) -> None:
    """Fail ``flag`` at once for a sampler without torch's Stateful protocol."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    if run.missing:
        expect_holds(run.uninterrupted[0], [missing_protocol(flag, run.missing)])


def _where_they_part(expected: Observation[IndexCase], got: Observation[IndexCase], rank: int) -> str:
    """Where the resumed run first leaves the uninterrupted one on ``rank``: batch by batch
    where both were batched (the same items may be cut into other batches), else item by item."""
    readings = ("the uninterrupted run", "the resumed one")
    if expected.batches is not None and got.batches is not None:
        return first_difference(expected.batches[rank], got.batches[rank], "batch", readings)
    return first_difference(expected.indices[rank], got.indices[rank], readings=readings)


def _differs(expected: Observation[IndexCase], got: Observation[IndexCase], rank: int) -> bool:
    if not np.array_equal(expected.indices[rank], got.indices[rank]):
        return True
    if expected.batches is not None and got.batches is not None:  # the same items, cut into other batches
        return [len(b) for b in expected.batches[rank]] != [len(b) for b in got.batches[rank]]
    return False


def compare_ranks(
    flag: str, expected: Observation[IndexCase], got: Observation[IndexCase], what: str
) -> list[Violation]:
    """Every rank yields what ``expected`` says, item for item; ``what`` says which run is which."""
    for rank in range(len(expected.indices)):
        if _differs(expected, got, rank):
            return [
                Violation(
                    flag,
                    f"rank {rank}: {what}: expected {shorten(expected.indices[rank])}, got "
                    f"{shorten(got.indices[rank])}; {_where_they_part(expected, got, rank)}",
                )
            ]
    return []


# A diagnostic, not a violation: torch's Sampler protocol does not say whether len() after a
# resume counts the epoch or its rest (torchdata's StatefulDistributedSampler counts the epoch).
LEN_COUNTS_THE_EPOCH = (
    "after a resume mid-epoch, len() still counts the whole epoch while the pass yields only its rest: a loop "
    "that sizes the resumed epoch from len() (a progress bar, an LR schedule) counts steps that never come"
)


def len_counts_the_epoch(run: ResumeRun) -> bool:
    """Whether some rank, resumed after items of the epoch, said a len() before its resumed
    pass that counts more than that pass yielded."""
    if not run.consumed or not any(part.items_read for part in run.consumed) or not run.resumed:
        return False
    resumed = run.resumed[0]
    before = resumed.lengths_before or ()
    return any(isinstance(n, int) and n > yielded for n, yielded in zip(before, resumed.lengths, strict=False))


def joined(run: ResumeRun) -> Observation[IndexCase]:
    """Each rank's epoch as the interrupted run yielded it: the items before every
    checkpoint, then the resumed pass."""
    parts = [*run.consumed, run.resumed[0]]
    indices = tuple(np.concatenate([part.indices[rank] for part in parts]) for rank in range(len(parts[0].indices)))
    batches = None
    if all(part.batches is not None for part in parts):
        batches = tuple(
            tuple(batch for part in parts for batch in (part.batches or ())[rank]) for rank in range(len(indices))
        )
    return Observation(run.resumed[0].case, indices, run.resumed[0].reported_lengths, batches)


def cuts_text(run: ResumeRun) -> str:
    """``after 3 items`` or ``after 3, then 5 items`` (on the longest rank), from what was consumed."""
    counts = []
    total = 0
    for part in run.consumed:
        total += max(part.lengths) if part.lengths else 0
        counts.append(total)
    return f"after {', then '.join(map(str, counts[:-1]))}{', then ' if counts[:-1] else ''}{items(counts[-1])}"


@DECLARED(
    Invariant(
        "resume_continues",
        "resume continues the epoch",
        "a resume that replays the epoch from its start, or from another epoch's order",
        f"{RESUME_BAD}:ReplaysEpochZero",
        proven_under=RESUMABLE_UNDER,
        where=Where.IN_PROCESS,
        promised_by=(
            RESUMABLE,
            ELASTIC,
        ),
    )
)
def check_continues(run: ResumeRun) -> list[Violation]:
    """R1: on every rank, the items before the checkpoints and the resumed pass together are
    the uninterrupted epoch, item for item."""
    epoch = run.epoch
    return compare_ranks(
        "resume_continues",
        run.uninterrupted[0],
        joined(run),
        f"resumed {cuts_text(run)} of epoch {epoch} (state_dict(), then load_state_dict(state) into a fresh sampler "
        f"and set_epoch({epoch})), the epoch differs from the uninterrupted one",
    )


@DECLARED(
    Invariant(
        "resume_exactly_once",
        "nothing repeated or lost across a resume",
        "a resume that skips too far or not far enough: items trained twice or never in the epoch",
        f"{RESUME_BAD}:SkipsGlobalCount",
        proven_under=RESUMABLE_UNDER,
        where=Where.IN_PROCESS,
        promised_by=(
            RESUMABLE,
            ELASTIC,
        ),
    )
)
def check_exactly_once(run: ResumeRun, dataset_size: int) -> list[Violation]:
    """R2: across the ranks, the interrupted epoch yields every index the uninterrupted one
    does, and none more often (padding included)."""
    due = index_counts([run.uninterrupted[0]], dataset_size)
    got = index_counts([joined(run)], dataset_size)
    lost = np.flatnonzero((due > 0) & (got == 0))
    repeated = np.flatnonzero(got > due)
    if not lost.size and not repeated.size:
        return []
    surplus = int((got - due)[repeated].sum())
    parts = []
    if repeated.size:
        parts.append(f"repeat {items(surplus)} beyond the uninterrupted epoch's padding: {shorten(repeated)}")
    if lost.size:
        parts.append(f"never yield {items(int(lost.size))} of the epoch: {shorten(lost)}")
    return [
        Violation(
            "resume_exactly_once",
            f"resumed {cuts_text(run)} of epoch {run.epoch}, the ranks together {' and '.join(parts)}",
        )
    ]


def check_next_passes(flag: str, run: ResumeRun, what: str) -> list[Violation]:
    """Every pass of the resumed sampler from epoch ``first`` on equals the uninterrupted
    epoch: from the first when the checkpoint followed a finished pass, else the later ones."""
    violations: list[Violation] = []
    start = 0 if run.first_resumed_epoch != run.epoch else 1
    for k in range(start, len(run.resumed)):
        epoch = run.first_resumed_epoch + k
        violations += compare_ranks(
            flag,
            run.uninterrupted_at(epoch),
            run.resumed[k],
            f"{what}, set_epoch({epoch}) gave another epoch than the uninterrupted run's",
        )
        if violations:
            break
    return violations


@DECLARED(
    Invariant(
        "plain_state",
        "state is plain data, independent of global RNGs",
        "states that torch.load(weights_only=True) refuses, that change a fresh run, or resumes that draw "
        "from the global RNGs",
        f"{RESUME_BAD}:StateHoldsNumpyArray",
        proven_under=RESUMABLE_UNDER,
        where=Where.IN_PROCESS,
        promised_by=(
            RESUMABLE,
            ELASTIC,
        ),
    )
)
def check_not_plain(run: ResumeRun) -> list[Violation]:
    return [
        Violation(
            "plain_state",
            f"rank {rank}: state_dict() cannot go through torch.save and torch.load(weights_only=True), as a "
            f"checkpoint carries it ({why}); a state must be plain data: dicts, lists, numbers, strings, tensors",
        )
        for rank, why in run.not_plain[:1]
    ]


def _batch_counts(observation: Observation[IndexCase], batch_size: int) -> tuple[int, ...]:
    """Each rank's training steps: a batch sampler's batches, else BatchSampler(drop_last=False)'s."""
    if observation.batches is not None:
        return tuple(len(batches) for batches in observation.batches)
    return tuple(batch_count(indices.size, batch_size) for indices in observation.indices)


def _spread(counts: Sequence[int]) -> int:
    return max(counts) - min(counts) if counts else 0


def counts_agree(
    flag: str,
    observed: Observation[IndexCase],
    allowed: Observation[IndexCase] | None,
    reduced_items: Sequence[Sequence[int]],
    reduced_batches: Sequence[Sequence[int]],
    what: str,
) -> list[Violation]:
    """The ranks' passes in ``observed`` hold as many items, and as many batches, as each
    other: they may differ only as much as ``allowed``'s do (None: not at all), and in a
    process group the all-reduce delivers those counts on every rank."""
    batch_size = observed.case.batch_size
    per_kind = (
        ("items", observed.lengths, allowed.lengths if allowed else (), reduced_items),
        (
            f"batches of {batch_size}",
            _batch_counts(observed, batch_size),
            _batch_counts(allowed, batch_size) if allowed else (),
            reduced_batches,
        ),
    )
    for kind, counted, reference, reduced_per_rank in per_kind:
        for rank, reduced in enumerate(reduced_per_rank):
            if tuple(reduced) != tuple(counted):
                return [
                    Violation(
                        flag,
                        f"rank {rank}: the all-reduce of the resumed pass's counts of {kind} gave {list(reduced)}, "
                        f"but the ranks counted {list(counted)}",
                    )
                ]
        if _spread(counted) > _spread(reference):
            than = f"where an uninterrupted pass holds {list(reference)}" if allowed else "where each must hold as many"
            return [
                Violation(
                    flag,
                    f"{what}, the ranks' passes hold {list(counted)} {kind} (all-reduced as DDP meets them), "
                    f"{than}: {UNEVEN_STEPS_HANG}",
                )
            ]
    return []


@DECLARED(
    Invariant(
        "resumed_ranks_agree",
        "ranks agree after a resume",
        "a resume that deals the rest of the epoch unevenly (4/3/3): one rank runs a step more and DDP hangs",
        f"{RESUME_BAD}:UnevenAfterResume",
        proven_under=RESUMABLE_UNDER,
        where=Where.GROUPS,
        promised_by=(
            RESUMABLE,
            ELASTIC,
        ),
    )
)
def check_resumed_ranks_agree(run: ResumeRun) -> list[Violation]:
    """R7, in a process group: after the resume, the ranks' passes hold as many items, and
    as many batches, as each other, and the all-reduce delivers those counts on every rank.
    The ranks may differ only as much as an uninterrupted pass's do (by one under partition;
    not at all under the contracts that promise equal lengths)."""
    return counts_agree(
        "resumed_ranks_agree",
        run.resumed[0],
        run.uninterrupted[0],
        run.reduced_items,
        run.reduced_batches,
        f"resumed {cuts_text(run)} of epoch {run.epoch}",
    )
