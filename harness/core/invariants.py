"""Invariants as data: the record every subject declares its invariants with, and the registry.

Each record says what the invariant is called, the bug class it guards against, when it
applies (the parameters it needs), where it is checked (in-process and in real process
groups, or in real groups only), and the known-bad subject that proves its tests can fail
(``selftests/test_registry.py`` holds every record to that). An invariant judged on one
epoch of every rank is declared on its judge, in the subject's ``checks.py`` table, with
:meth:`OneEpoch.declare`: the record, the judge and the case fields it speaks about in one
place, and the subject's per-epoch tests generated from that table. One with a check of its
own elsewhere is declared on that check (:class:`Declared`); one checked by a function shared
with others (two orders compared, a resume's ranks compared) or in its test's body is
declared in the subject's ``invariants.py``. Each kind of thing under test lists its records
there (its one-epoch table's, its check modules' and the rest); ``harness.subjects`` loads
every kind and enters its records here, refusing a flag declared twice. Contracts are
composed of promises, each a few of these flags; the titles in failure messages, the
``--list-contracts`` text, the table in docs/contracts.md and the "not run" bookkeeping all
come from the records.

This module imports nothing from the harness, so every other module may import it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Generic, Protocol, TypeVar, cast


class Promised(Protocol):
    """What an invariant names as the promise it says (``harness.core.contracts.Promise``)."""

    def said_by(self, flag: str) -> None:
        """Enter ``flag`` among the invariants that say the promise."""


class Where(str, Enum):
    """Where an invariant is checked."""

    BOTH = "on simulated ranks and in real process groups"
    IN_PROCESS = "on simulated ranks only"
    GROUPS = "in real process groups only"
    # Judged by no test of its own: on every request that ranks on a device mesh answer, so every
    # test's mesh variants judge it (harness.execution.mesh).
    MESH = "on every request of the ranks of a device mesh"


@dataclass(frozen=True)
class Invariant:
    flag: str
    title: str  # the words in failure messages: "[union coverage] ..."
    guards: str  # the bug class it guards against
    known_bad: str  # MODULE:ATTR of a subject that breaks it (selftests/corpus)
    proven_under: str = "torch"  # the contract the known-bad subject is certified under
    where: Where = Where.BOTH
    needs: tuple[str, ...] = ()  # parameters of the subject it cannot be checked without
    packages: tuple[str, ...] = ()  # packages it cannot be checked without: its tests skip, saying so
    # The fewest items a reading must hold for a case to judge it (to count toward the floor,
    # ``profiles.judged_floor``): 1, since an epoch that read nothing cannot break what is
    # said of its items; 2 for an order compared across readings, epochs, seeds or
    # processes, which one item cannot show; 0 where an empty epoch can fail it (a crash).
    judged_from: int = 1
    # Judged by a measurement over a fixed plan of sizes (one rank's cost as N grows), not on
    # drawn cases: one judgement decides it, so the floor of judged cases, which bounds the
    # chance that draws missed a bug on some cases, does not apply.
    measured: bool = False
    # The promises it says (one of a subject's contracts.py, or an extension): each takes its
    # flag as the record is made, so a promise's flags are derived from the declarations.
    promised_by: tuple[Promised, ...] = ()

    def __post_init__(self) -> None:
        for promise in self.promised_by:
            promise.said_by(self.flag)


Judge = TypeVar("Judge", bound=Callable[..., Any])
Check = TypeVar("Check", bound=Callable[..., Any])


@dataclass(frozen=True)
class Judged(Generic[Judge]):
    """An invariant judged on one epoch of every rank: its record and its judge, declared together."""

    invariant: Invariant
    judge: Judge  # the subject's reading of one epoch (and what else its table passes) -> violations
    fixed: tuple[tuple[str, object], ...] = ()  # the case fields it speaks about (padding: drop_last=False)
    against_one_rank: bool = False  # judged against the one-rank reading too (the index sampler's layouts)
    # Judged on a partial reading too, of some ranks only (a case of 16,384 ranks at N = 2^31):
    # what it says of each rank, or of the ranks read together, holds of them without the rest.
    partial: bool = False

    @property
    def flag(self) -> str:
        return self.invariant.flag

    def applies(self, case: object) -> bool:
        """Whether the case is one the invariant speaks about."""
        return all(getattr(case, name) == value for name, value in self.fixed)


class Declared:
    """Invariants declared each on a check of its own (one check, one invariant), in
    declaration order: a check module's ``DECLARED``, whose records its subject's
    ``invariants.py`` lists::

        DECLARED = Declared()

        @DECLARED(Invariant("agrees_across_ranks", "ranks agree on one global order", ...))
        def check_ranks_agree(...): ...
    """

    def __init__(self) -> None:
        self._invariants: dict[str, Invariant] = {}

    def __call__(self, invariant: Invariant) -> Callable[[Check], Check]:
        """Declares ``invariant`` on the check it decorates, which it returns unchanged."""

        def declared(check: Check) -> Check:
            if invariant.flag in self._invariants:
                raise ValueError(f"invariant {invariant.flag!r} is declared twice")
            self._invariants[invariant.flag] = invariant
            return check

        return declared

    @property
    def invariants(self) -> tuple[Invariant, ...]:
        return tuple(self._invariants.values())


class OneEpoch(Declared, Generic[Judge]):
    """A subject's invariants judged on one epoch of every rank, each declared on its judge,
    in declaration order::

        PER_EPOCH: OneEpoch[Judge] = OneEpoch()

        @PER_EPOCH.declare(Invariant("covers", "union coverage", "silently dropped data", "corpus:RankInSeed"))
        def check_coverage(observation, contract, one_rank): ...

    The subject's per-epoch tests are generated from the table, and its ``invariants.py``
    lists the records (:attr:`invariants`, kept and refused twice as :class:`Declared` does)."""

    def __init__(self) -> None:
        super().__init__()
        self._judged: dict[str, Judged[Judge]] = {}

    def declare(
        self,
        invariant: Invariant,
        *,
        fixed: Mapping[str, object] | None = None,
        against_one_rank: bool = False,
        partial: bool = False,
    ) -> Callable[[Check], Check]:
        """Declares ``invariant`` judged by the function it decorates, which it returns unchanged
        (its own signature kept, defaults included, for callers outside the table)."""

        def declared(check: Check) -> Check:
            self(invariant)(check)
            judge = cast(Judge, check)  # called by the subject's tests as the table's judge
            self._judged[invariant.flag] = Judged(
                invariant, judge, tuple((fixed or {}).items()), against_one_rank, partial
            )
            return check

        return declared

    def __iter__(self) -> Iterator[Judged[Judge]]:
        return iter(self._judged.values())

    def __getitem__(self, flag: str) -> Judged[Judge]:
        return self._judged[flag]

    def __contains__(self, flag: object) -> bool:
        return flag in self._judged

    @property
    def flags(self) -> tuple[str, ...]:
        return tuple(self._judged)


# Every kind's invariants, by flag, in declaration order: filled by ``harness.subjects``, which
# every reader imports (or is imported by) first.
REGISTRY: dict[str, Invariant] = {}


def enter(invariants: Iterable[Invariant]) -> None:
    """Adds a kind's records to the registry; a flag another record already has is an error."""
    for invariant in invariants:
        if invariant.flag in REGISTRY and REGISTRY[invariant.flag] is not invariant:
            raise ValueError(f"invariant {invariant.flag!r} is declared twice")
        REGISTRY[invariant.flag] = invariant


def title(flag: str) -> str:
    """The invariant's title; a flag the registry does not know (the generic fault) as is."""
    return REGISTRY[flag].title if flag in REGISTRY else flag
