"""Invariants as data: the record every subject declares its invariants with, and the registry.

Each record says what the invariant is called, the bug class it guards against, when it
applies (the parameters it needs), where it is checked (in-process and in real process
groups, or in real groups only), and the known-bad subject that proves its tests can fail
(``selftests/test_registry.py`` holds every record to that). Each kind of thing under test
declares its own (``harness/subjects/<kind>/invariants.py``); ``harness.subjects`` loads
every kind and enters its records here, refusing a flag declared twice. Contracts are sets of
these flags; the titles in failure messages, the ``--list-contracts`` text, the table in
docs/contracts.md and the "not run" bookkeeping all come from the records.

This module imports nothing from the harness, so every other module may import it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum


class Where(str, Enum):
    """Where an invariant is checked."""

    BOTH = "on simulated ranks and in real process groups"
    IN_PROCESS = "on simulated ranks only"
    GROUPS = "in real process groups only"


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
