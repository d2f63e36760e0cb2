"""What a certification test's report carries, written: its violations as JSON records, and
the suite's own errors, named (read back by ``results.ResultCollector``)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sampler_conformance.core.evidence import FAULT, Evidence, HarnessError, SamplerDeath, SamplerHang

from .results import HARNESS_ERROR_KEY, VIOLATION_KEY

if TYPE_CHECKING:
    from sampler_conformance.core.subject import Subject

if sys.version_info >= (3, 11):
    from builtins import BaseExceptionGroup
else:  # Python 3.10: the backport Hypothesis depends on there
    from exceptiongroup import BaseExceptionGroup


# Why a counterexample is shown as it was drawn, not shrunk (docs/counterexamples.md).
ENDS_AT_ONCE = "a hang or a death ends its test at once, unshrunk, since each step would cost a timeout"


def failure_properties(error: BaseException, subject: Subject, as_drawn: str | None = None) -> list[tuple[str, object]]:
    """The violations a failure carries; a failure that carries none is the suite's own
    error, named by its exception. ``as_drawn``: why the test could not shrink it, if it could not."""
    properties: list[tuple[str, object]] = []
    for leaf in leaves(error):
        if isinstance(leaf, Evidence):
            ends = isinstance(leaf, (SamplerHang, SamplerDeath))
            properties += violation_properties([leaf], subject, as_drawn=ENDS_AT_ONCE if ends else as_drawn)
    for leaf in leaves(error):
        if isinstance(leaf, HarnessError):
            properties.append((HARNESS_ERROR_KEY, str(leaf)))
        elif not isinstance(leaf, Evidence):
            first_line = (str(leaf).strip().splitlines() or [""])[0]
            properties.append((HARNESS_ERROR_KEY, f"{type(leaf).__name__}: {first_line}"))
    return properties


def violation_properties(
    evidence: Sequence[Evidence], subject: Subject, *, cases: int = 1, as_drawn: str | None = None
) -> list[tuple[str, object]]:
    """Each violation as JSON with its Hypothesis draws, the number of ``cases`` it stands for
    (a test's set-aside faults of one kind, its smallest shown), and why it was not shrunk,
    if it was not. A sampler fault (it raised, hung or died) counts against the invariant
    that it runs without crashing, the subject's ``crash_flag``; it is titled in the
    subject's noun already (``evidence.speak_of``)."""
    properties: list[tuple[str, object]] = []
    for leaf in evidence:
        draws = [note for note in getattr(leaf, "__notes__", []) if note.startswith("Draw ")]
        for record in leaf.records(draws):
            if record["flag"] == FAULT:
                record["flag"] = subject.crash_flag
            record.update(cases=cases, as_drawn=as_drawn)
            properties.append((VIOLATION_KEY, json.dumps(record)))
    return properties


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups: Hypothesis reports several distinct
    failures, and a replay that no longer fails (FlakyFailure), as groups."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]
