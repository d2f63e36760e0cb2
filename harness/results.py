"""Per-invariant results: gathered from test reports, printed as the verdict, written as the certificate.

Every certification test carries ``@pytest.mark.invariant(FLAG)``. An invariant held
when its tests passed (some variants may be skipped), failed when any failed, and is
otherwise not applicable (the sampler lacks a parameter), not promised by the contract,
or turned off with --without.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest

from .contracts import INVARIANTS, Contract

HELD, FAILED, NOT_APPLICABLE, NOT_PROMISED, TURNED_OFF = "held", "failed", "not applicable", "not promised", "turned off"
INVARIANT_KEY = "invariant"
EXAMPLES_KEY = "examples"
FINDING_KEY = "finding"
_GROUP_MARGIN = re.compile(r"^(?:\s*\|)+ ?")  # the "    | " before an ExceptionGroup's sub-tracebacks
_FAILURE_PREFIXES = tuple(f"harness.verdict.{name}: " for name in ("PropertyFailure", "SamplerFault", "SamplerHang"))


@dataclass
class InvariantResult:
    flag: str
    title: str
    status: str
    details: list[str] = field(default_factory=list)  # counterexamples, or why it was not applicable
    tests: list[str] = field(default_factory=list)
    examples: int = 0


@dataclass
class _TestOutcome:
    name: str
    outcome: str
    detail: str
    examples: int


def counterexamples(report: pytest.TestReport) -> list[str]:
    """Each distinct failure's message and Hypothesis draws, without the tracebacks.

    Hypothesis reports several distinct failures as an ExceptionGroup, whose crash line
    says only how many; the sub-exceptions are read from the full report text instead.
    """
    crash = getattr(report.longrepr, "reprcrash", None)
    message = crash.message if crash is not None else str(report.longrepr)
    if not message.startswith(("ExceptionGroup", "BaseExceptionGroup")):
        return [_one_counterexample(message.splitlines())]
    lines = [_GROUP_MARGIN.sub("", line) for line in report.longreprtext.splitlines()]
    starts = [i for i, line in enumerate(lines) if line.startswith(_FAILURE_PREFIXES)]
    found = [_one_counterexample(lines[i : j]) for i, j in zip(starts, starts[1:] + [len(lines)])]
    return found or [message]


def _one_counterexample(lines: list[str]) -> str:
    text = "\n".join(lines)
    for prefix in _FAILURE_PREFIXES:
        text = text.removeprefix(prefix)
    failure, _, example = text.partition("Falsifying example:")
    draws = [line for line in example.splitlines() if line.startswith("Draw ")]
    return "\n".join([failure.rstrip(), *draws]).strip()


def skip_reason(report: pytest.TestReport) -> str:
    if isinstance(report.longrepr, tuple):
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    return "skipped"


class ResultCollector:
    """Turns the certification tests' reports into one result per invariant."""

    def __init__(self, contract: Contract) -> None:
        self.contract = contract
        self.outcomes: dict[str, list[_TestOutcome]] = {}
        self.findings: list[str] = []

    def add(self, report: pytest.TestReport) -> None:
        properties = dict(report.user_properties)
        flag = properties.get(INVARIANT_KEY)
        if flag is None:
            return
        for key, value in report.user_properties:
            if key == FINDING_KEY and value not in self.findings:
                self.findings.append(value)
        if report.when != "call" and report.passed:
            return
        name = report.nodeid.split("::", 1)[-1]
        details = counterexamples(report) if report.failed else [skip_reason(report)] if report.skipped else [""]
        examples = int(properties.get(EXAMPLES_KEY, 0))
        for detail in details:
            self.outcomes.setdefault(flag, []).append(_TestOutcome(name, report.outcome, detail, examples))
            examples = 0  # counted once per test

    def results(self) -> list[InvariantResult]:
        flags = [f for f in INVARIANTS if f in self.outcomes or self.contract.promises(f) or f in self.contract.turned_off]
        flags += [f for f in self.outcomes if f not in INVARIANTS]  # tests marked with an unlisted flag
        return [self._result(flag) for flag in flags]

    def _result(self, flag: str) -> InvariantResult:
        outcomes = self.outcomes.get(flag, [])
        result = InvariantResult(flag, INVARIANTS.get(flag, flag), NOT_PROMISED)
        result.tests = [o.name for o in outcomes]
        result.examples = sum(o.examples for o in outcomes)
        kinds = {o.outcome for o in outcomes}
        if flag in self.contract.turned_off:
            result.status, result.details = TURNED_OFF, ["turned off with --without"]
        elif not self.contract.promises(flag):
            result.details = [f"contract {self.contract.name!r} does not promise it"]
        elif "failed" in kinds:
            result.status = FAILED
            result.details = [f"{o.name}: {o.detail}" for o in outcomes if o.outcome == "failed"]
        elif "passed" in kinds:
            result.status = HELD
            result.details = [f"not run: {o.name}: {o.detail}" for o in outcomes if o.outcome == "skipped"]
        elif kinds:
            result.status = NOT_APPLICABLE
            result.details = [f"not run: {o.name}: {o.detail}" for o in outcomes]
        else:
            result.status, result.details = NOT_APPLICABLE, ["no test for it ran in this session (deselected?)"]
        return result


def verdict_line(spec: str, contract: Contract, results: list[InvariantResult]) -> tuple[bool, str]:
    """(conforms, one line) over the invariants the contract promises."""
    promised = [r for r in results if r.status not in (NOT_PROMISED, TURNED_OFF)]
    failed = [r.flag for r in promised if r.status == FAILED]
    held = sum(r.status == HELD for r in promised)
    counts = f"{len(promised)} invariants: {held} held, {len(failed)} failed, {len(promised) - held - len(failed)} not applicable"
    if failed:
        return False, f"VERDICT: {spec} does NOT conform to contract {contract.name!r} ({counts}); failed: {', '.join(failed)}"
    if not held:
        return False, f"NO VERDICT: no invariant of contract {contract.name!r} was checked for {spec} ({counts})"
    return True, f"VERDICT: {spec} conforms to contract {contract.name!r} ({counts})"
