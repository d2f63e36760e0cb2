"""Failures as structured evidence, and the text they print.

A failure carries its violations (flag and message), the case and what every rank
yielded. The text a user reads is rendered from them; the summary, the certificate,
JUnit and the verdict table read the same objects through :meth:`Evidence.records`,
never the rendered text.
"""

from __future__ import annotations

import re
import unittest
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, NoReturn

import numpy as np

from .case import Case, NoLen, Observation, length_words
from .invariants import title

# The flag of a sampler that raises, dies or hangs: no invariant can be judged on that
# case. The plugin charges it to the subject's crash flag ("runs without crashing": for the
# index sampler, edge_sizes): see harness.pytest_plugin.crashes.
FAULT = "sampler fault"
# What a fault is titled wherever it is shown: in the noun of the subject under test
# ("dataset fault"), once the plugin says which one runs (:func:`speak_of`); and what a rank
# yields, singular and plural, in a counterexample's rank lines ("rank 0 (3 items): ...").
_fault_title = FAULT
_yielded = ("index", "indices")

SHOWN_HEAD = 12
SHOWN_TAIL = 4
SHOWN_RANKS = 8


@dataclass(frozen=True)
class Violation:
    flag: str
    message: str  # one line or a few: what broke, on which rank
    detail: str = ""  # evidence shown under it: the sampler's traceback, a hung rank's stack
    # True of the sampler on every case alike (a method it lacks): recorded without the case
    # it was found on, so that the tests that find it add up to one counterexample.
    every_case: bool = False

    @property
    def title(self) -> str:
        return _fault_title if self.flag == FAULT else title(self.flag)


class Evidence(BaseException):
    """What a failure proves: the violations, the case they occurred on, each rank's indices.

    A base of the failures below, each of which also says what it is caught as (an
    AssertionError, or a BaseException that Hypothesis does not shrink through)."""

    def __init__(
        self,
        violations: Iterable[Violation],
        case: Case | None = None,
        observation: Observation | None = None,
        context: str = "",
    ) -> None:
        self.violations = tuple(violations)
        self.case = case
        self.observation = observation
        super().__init__(failure_text(self.violations, case, observation) + context)

    def records(self, draws: Sequence[str] = ()) -> list[dict[str, Any]]:
        """One plain dict per violation, for reports, the certificate and JUnit."""
        ranks = describe_ranks(self.observation).splitlines() if self.observation is not None else []
        records = []
        for v in self.violations:
            case = None if v.every_case else self.case  # a fact of every case is recorded without one
            records.append(
                {
                    "flag": v.flag,
                    "title": v.title,
                    "message": v.message,
                    "detail": v.detail,
                    "case": case.describe() if case is not None else None,
                    "parameters": case.parameters() if case is not None else None,
                    "ranks": [line.strip() for line in ranks] if case is not None else [],
                    "draws": list(draws) if case is not None else [],
                }
            )
        return records


class PropertyFailure(Evidence, AssertionError):
    """An invariant does not hold for a case."""


class SamplerFault(Evidence, AssertionError):
    """The sampler raised, died, or yielded something that is not an index."""


class SamplerHang(Evidence, BaseException):
    """A rank stopped answering inside the sampler's own code: no call into it returned
    within the time bound, and no peer had raised or died first.

    A BaseException on purpose: Hypothesis shrinks on Exception, and shrinking a hang
    would cost one full timeout per step. This one ends the test at once, reporting the
    case as drawn.
    """


class SamplerDeath(Evidence, BaseException):
    """A rank of a process group died inside a call into the sampler. A BaseException, as
    :class:`SamplerHang` is: each replay would cost a group restart."""


@cache
def _distinct(kind: type[Evidence], flag: str) -> type[Evidence]:
    """A subclass of ``kind`` per flag, so that Hypothesis, which tells failures apart by
    exception type and line, shrinks each broken invariant to its own counterexample."""
    return type(kind.__name__, (kind,), {"__module__": kind.__module__, "__qualname__": kind.__qualname__})


def raise_evidence(
    kind: type[Evidence],
    violations: Sequence[Violation],
    case: Case | None,
    observation: Observation | None = None,
    context: str = "",
) -> None:
    """Raise ``kind`` of the violations that count (:func:`charge_only`): none where every
    one is of an invariant turned off, and the test goes on to judge its own."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    violations = [v for v in violations if _charged(v.flag)]
    if not violations:
        return
    distinct = _distinct(kind, violations[0].flag)  # type: ignore[arg-type]  # mypy thinks a class unhashable
    raise distinct(violations, case, observation, context)


def _every_flag(flag: str) -> bool:
    return True


# Which violations count: all, unless the plugin installed its own (:func:`charge_only`).
_charged: Callable[[str], bool] = _every_flag


def charge_only(charged: Callable[[str], bool]) -> None:
    """Have failures carry only the violations of flags ``charged`` accepts: the plugin leaves
    out those turned off with ``--without``, so a test that checks a turned-off invariant
    beside its own (the seed 001 experiment's batch sizes) fails on nothing it was told to ignore."""
    global _charged
    _charged = charged


def counted(count: int, noun: str, plural: str = "") -> str:
    """``1 index``, ``3 indices``: ``count`` of ``noun`` (``plural``: where not ``noun + "s"``)."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def shorten(values: Sequence[int] | np.ndarray, head: int = SHOWN_HEAD, tail: int = SHOWN_TAIL) -> str:
    items = [int(v) for v in values[: head + tail + 1]] if len(values) <= head + tail else None
    if items is not None:
        return "[" + ", ".join(map(str, items)) + "]"
    first = ", ".join(str(int(v)) for v in values[:head])
    last = ", ".join(str(int(v)) for v in values[-tail:])
    return f"[{first}, ... {len(values) - head - tail} more ..., {last}]"


# What tells two failures of one invariant apart: the words of the message, its numbers and
# lists of values masked ("rank 0 drew [3, 4], outside range(N=2)" and "rank 1 drew [9],
# outside range(N=5)" are one kind; a ValueError and a TypeError raised while iterating are two).
_VALUES = re.compile(r"\[[^\[\]]*\]|-?\d+(\.\d+)?(e-?\d+)?")


def failure_kind(title: str, message: str) -> str:
    """The kind of a failure, from its title and its message's first line, values masked."""
    first_line = (message.splitlines() or [""])[0]
    return f"[{title}] " + _VALUES.sub("#", first_line)


def describe_ranks(observation: Observation) -> str:
    lines = []
    for rank, indices in enumerate(observation.indices[:SHOWN_RANKS]):
        reported = observation.reported_lengths[rank]
        length = "" if reported is NoLen.NOT_ASKED else f", {length_words(reported)}"  # the suite's choice, not news
        lines.append(f"  rank {rank} ({counted(len(indices), *_yielded)}{length}): {shorten(indices)}")
    hidden = len(observation.indices) - SHOWN_RANKS
    if hidden > 0:
        lines.append(f"  ... {hidden} more ranks")
    return "\n".join(lines)


def failure_text(violations: Iterable[Violation], case: Case | None, observation: Observation | None) -> str:
    lines = [f"[{v.title}] {v.message}" + (f"\n{v.detail}" if v.detail else "") for v in violations]
    if case is not None:
        lines.append(f"  case: {case.describe()}")
    if observation is not None:
        lines.append(describe_ranks(observation))
    return "\n".join(lines)


def _judged_nowhere(observation: Observation) -> None:
    pass


# What expect_holds() tells of each observation it found the invariant held on: nothing,
# unless the pytest plugin installed its own (it counts the cases that could have failed).
_note_judged: Callable[[Observation], None] = _judged_nowhere


def speak_of(fault_title: str, yielded: tuple[str, str]) -> None:
    """Speak of the subject under test in its own words, in pytest's failure text, the
    summary and the certificate alike: title every fault ``fault_title``
    (``Subject.fault_title``), and count what a rank yields in ``yielded`` (``Subject.yields``)."""
    global _fault_title, _yielded
    _fault_title, _yielded = fault_title, yielded


def note_judged_with(hook: Callable[[Observation], None]) -> None:
    """Have :func:`expect_holds` hand every observation it judged, and found held, to ``hook``.
    The plugin installs ``harness.pytest_plugin.crashes.note_judged`` at configure: an example
    counts as judged only if some observation it judged could have failed the invariant
    (``harness.core.invariants.Invariant.judged_from``)."""
    global _note_judged
    _note_judged = hook


def expect_holds(observation: Observation, violations: Iterable[Violation], context: str = "") -> None:
    """Raise :class:`PropertyFailure` listing ``violations`` if there are any; else tell the
    hook the plugin installed (:func:`note_judged_with`) that ``observation`` was judged."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    violations = [v for v in violations if _charged(v.flag)]
    if violations:
        raise_evidence(PropertyFailure, violations, observation.case, observation, context)
    _note_judged(observation)


def fail(flag: str, message: str, case: Case, observation: Observation | None = None) -> None:
    """Raise a PropertyFailure of ``flag``, unless ``flag`` is turned off (:func:`charge_only`)."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    raise_evidence(PropertyFailure, [Violation(flag, message)], case, observation)


class NotApplicable(unittest.SkipTest):
    """The test cannot apply to what is under test (a parameter it lacks, a sampler that runs
    only in a process group): the verdict says "not applicable", with the reason, where a
    skip would say "not run". The plugin tells the two kinds apart by this type.

    A ``unittest.SkipTest``, which the standard library defines: pytest reports it as a skip
    (in a fixture too), and Hypothesis passes it through at once instead of shrinking it.
    """


def not_applicable(reason: str) -> NoReturn:
    """Stop the calling test or fixture: "not applicable", with ``reason``."""
    raise NotApplicable(reason)


class NotPromised(unittest.SkipTest):
    """The contract makes the test's invariant conditional on an optional method that this
    sampler does not define (``len()`` under ``dynamic_batches``): the invariant is "not
    promised" for it, and the verdict does not wait for it, where "not applicable" would
    leave the certification partial."""


def not_promised(reason: str) -> NoReturn:
    """Stop the calling test: its invariant is "not promised" to this sampler, with ``reason``."""
    raise NotPromised(reason)


class HarnessError(BaseException):
    """The suite failed, not the sampler: a rank that hung or died with no sampler code on
    its stack, a loader worker that never started, a rendezvous that failed. Reported as a
    pytest error naming the cause, never as "does not conform".

    A BaseException, as :class:`SamplerHang` is: Hypothesis would shrink an Exception,
    replaying the case again and again, and every replay costs a group restart.

    ``raised``: a rank raised it (an exception with its traceback), which a fresh group would
    raise again; otherwise a rank hung or died, which may not recur, so the pool retries once.
    """

    def __init__(self, message: str = "", *, raised: bool = False) -> None:
        super().__init__(message)
        self.raised = raised
