"""How a failed certification test reads in pytest's own output: a failure of kinds another
test of the process showed in full in a few lines, and a failure of invariants declared
broken on purpose (``--expect-failure``) as pytest's xfail."""

from __future__ import annotations

from typing import Any

import pytest

from sampler_conformance.core.contracts import Contract
from sampler_conformance.core.evidence import failure_kind


def shown_once(report: pytest.TestReport, nodeid: str, records: list[dict[str, Any]], shown: dict[str, str]) -> None:
    """A failure of kinds a test of this process showed in full already (``failure_kind``: the
    same message, values aside; ``shown``: each kind shown, by the test that showed it) is
    shown in a few lines, its own case and a pointer to that test: one bug that fails many
    tests fills the output once, not once a test."""
    kinds = {failure_kind(record["title"], record["message"]): record for record in records}
    if not kinds or any(kind not in shown for kind in kinds):
        for kind in kinds:
            shown.setdefault(kind, nodeid.rpartition("/")[2])
        return
    lines = []
    for kind, record in kinds.items():
        lines += [f"[{record['title']}] {record['message'].splitlines()[0]}", f"  case: {record.get('case') or ''}"]
        lines.append(f"  the same kind of failure as {shown[kind]} shows in full above")
    report.longrepr = "\n".join(lines)


def expected_as_declared(report: pytest.TestReport, contract: Contract, failed_flags: set[str]) -> None:
    """A failure of invariants that --expect-failure declared broken reads as pytest's xfail,
    with their reasons (the summary still counts it as the failure it was)."""
    reasons = [f"{flag}: {contract.expected_failure(flag)}" for flag in sorted(failed_flags)]
    if failed_flags and all(contract.expected_failure(flag) for flag in failed_flags):
        report.outcome = "skipped"
        report.wasxfail = "declared with --expect-failure: " + "; ".join(reasons)
