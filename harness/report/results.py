"""Per-invariant results: gathered from test reports, printed as the verdict, written as the certificate.

Every certification test carries ``@pytest.mark.invariant(FLAG)``. A failing test
carries its violations as structured records (``report.user_properties``), and each
violation counts against its own flag, whichever test found it. An invariant is:

- ``failed``: some violation names it;
- ``held``: its tests ran to the end and found no violation, on at least the floor of
  judged cases in all (``profiles.judged_floor``), and, where it is checked both on
  simulated ranks and in real groups, on some case in the groups whose tests ran;
- ``not judged``: its tests stopped on another invariant's violation (or a crash) before
  they could judge it, or judged fewer cases than the floor (the sampler crashed on the rest,
  or they read too few items to fail it: an empty epoch judges nothing of its items), or
  judged it on simulated ranks only while its tests in real groups judged nothing;
- ``not applicable``: its tests could not apply to this sampler, for the reason given
  (a missing parameter, a sampler that only runs inside a process group);
- ``not run``: no test for it ran in this session (``-k``, a subset of paths, an
  environment that cannot run it, such as NCCL without GPUs);
- ``error``: the suite itself failed while checking it (a harness error, not a verdict);
- ``not promised`` by the contract, or by the contract to this sampler: an invariant the
  contract makes conditional on an optional method the sampler does not define (its tests
  said so, ``core.evidence.not_promised``); or ``turned off`` with ``--without``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from sampler_conformance.core import measurements
from sampler_conformance.core.case import SIZE_FIELDS, largest_sizes
from sampler_conformance.core.contracts import Contract
from sampler_conformance.core.evidence import counted
from sampler_conformance.core.frequencies import merge_summaries
from sampler_conformance.core.invariants import REGISTRY, Where, title
from sampler_conformance.core.subject import Subject
from sampler_conformance.subjects import subject_of

HELD, FAILED, NOT_APPLICABLE, NOT_RUN, ERROR = "held", "failed", "not applicable", "not run", "error"
NOT_JUDGED, NOT_PROMISED, TURNED_OFF = "not judged", "not promised", "turned off"
# An invariant declared broken on purpose (--expect-failure) that failed, or that held: pytest's words for a strict xfail.
XFAILED, XPASSED = "xfailed", "xpassed"
STATUSES = (HELD, FAILED, XFAILED, XPASSED, NOT_JUDGED, NOT_APPLICABLE, NOT_RUN, ERROR, NOT_PROMISED, TURNED_OFF)
UNCHECKED = (NOT_JUDGED, NOT_APPLICABLE, TURNED_OFF, NOT_RUN, ERROR)

# Keys of report.user_properties; plain strings and JSON so that they survive pytest-xdist and JUnit.
INVARIANT_KEY = "invariant"
EXAMPLES_KEY = "examples"
FINDING_KEY = "finding"
VIOLATION_KEY = "violation"  # JSON of one violation record (harness.core.evidence.Evidence.records)
HARNESS_ERROR_KEY = "harness_error"  # the suite failed, not the sampler: the cause
SKIP_KIND_KEY = "skip_kind"  # NOT_APPLICABLE, NOT_RUN or NOT_JUDGED, for a skipped test
SET_ASIDE_KEY = "set_aside"  # examples set aside: another invariant's fault on them (harness.pytest_plugin.crashes)
SET_ASIDE_BY_KEY = "set_aside_by"  # JSON: those examples by the flag their fault was charged to
JUDGED_KEY = "judged"  # examples that ran to the end and judged the test's invariant (harness.pytest_plugin.crashes)
TOO_FEW_ITEMS_KEY = "too_few_items"  # examples that ran to the end on too few items to fail it (Invariant.judged_from)
STATISTICS_KEY = (
    "statistics"  # JSON: the frequency tests a statistical invariant's test ran (harness.pytest_plugin.statistics)
)
MESH_KEY = "mesh"  # the device mesh a test's variant ran on (harness.execution.mesh.MeshLayout.id)
IN_GROUPS_KEY = "in_groups"  # its ranks ran in real process groups, not simulated
MEASUREMENTS_KEY = "measurements"  # JSON: what a test measured without judging it (harness.pytest_plugin.statistics)
SIZES_KEY = "sizes"  # JSON: the largest sizes of the cases a test judged (core.case.Case.sizes)
# Where the sizes judged were reached: the ranks simulated in one process, or real process groups.
SIMULATED_RANKS, IN_GROUPS = "simulated", "in_groups"

NO_TEST_RAN = "no test for it ran in this session (deselected with -k, or not in the paths given)"
# Why no test ran for an invariant that --ranks left without the ranks that judge it.
ONLY_IN_GROUPS = "only real process groups judge it, and --ranks=simulated starts none"
ONLY_SIMULATED = "only simulated ranks judge it, and --ranks=groups simulates none"
NOTHING_RAN = (NO_TEST_RAN, ONLY_IN_GROUPS, ONLY_SIMULATED)  # said once for every invariant it holds of
EVERY_CASE_SET_ASIDE = "every case this test drew was set aside"

# The states of a whole run, in the certificate and the verdict line.
CONFORMS, DOES_NOT_CONFORM, PARTIAL = "conforms", "does not conform", "partial"
INTERRUPTED, SUITE_ERROR, NO_VERDICT = "interrupted", "error", "no verdict"
# Every invariant held but those declared broken on purpose, which failed; or one of those held.
CONFORMS_AS_DECLARED, MISDECLARED = "conforms as declared", "misdeclared"


@dataclass
class InvariantResult:
    flag: str
    title: str
    status: str
    details: list[str] = field(default_factory=list)  # why not applicable / not run / error, or the test names
    counterexamples: list[dict[str, Any]] = field(default_factory=list)  # violation records, one per distinct failure
    tests: list[str] = field(default_factory=list)  # the tests that ran for it
    failed_tests: list[str] = field(default_factory=list)  # the tests whose violations name it
    examples: int = 0
    judged: int = 0  # cases its tests judged to the end, in all (a held one: at least the floor)
    statistics: dict[str, Any] | None = None  # a statistical invariant's frequency tests, summed up
    measurements: dict[str, Any] | None = None  # what its tests measured without judging it, summed up
    reproduction: dict[str, Any] | None = None  # a failed one's script (report/reproductions.py)


@dataclass
class _TestOutcome:
    name: str
    flag: str  # the test's own invariant (its marker)
    outcome: str  # passed, failed, skipped
    examples: int
    violations: list[dict[str, Any]]
    harness_error: str | None
    skip_kind: str | None
    skip_reason: str
    set_aside: int = 0
    judged: int = 0
    statistics: dict[str, Any] | None = None
    measurements: dict[str, Any] | None = None
    set_aside_by: dict[str, int] = field(default_factory=dict)  # by the flag each fault was charged to
    too_few_items: int = 0
    mesh: str | None = None  # the device mesh its ranks ran on
    in_groups: bool = False  # its ranks ran in real process groups


def skip_reason(report: pytest.TestReport) -> str:
    if isinstance(report.longrepr, tuple):
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    return "skipped"


class ResultCollector:
    """Turns the certification tests' reports into one result per invariant."""

    def __init__(self, contract: Contract, floor: int, ranks: str = "all") -> None:
        self.contract = contract
        self.floor = floor  # judged cases an invariant needs to be held
        self.ranks = ranks  # --ranks: simulated, groups or all
        self.outcomes: list[_TestOutcome] = []
        self.findings: list[str] = []
        # The largest sizes of the cases judged, on simulated ranks and in real groups: what a verdict claims.
        self.sizes: dict[str, dict[str, int]] = {SIMULATED_RANKS: {}, IN_GROUPS: {}}

    def add(self, report: pytest.TestReport) -> None:
        properties: list[tuple[str, Any]] = list(report.user_properties)
        flag = dict(properties).get(INVARIANT_KEY)
        if flag is None:
            return
        for key, value in properties:
            if key == FINDING_KEY and value not in self.findings:
                self.findings.append(value)
        if report.when != "call" and report.passed:
            return
        values = lambda key: [value for k, value in properties if k == key]  # noqa: E731
        where = IN_GROUPS if dict(properties).get(IN_GROUPS_KEY) else SIMULATED_RANKS
        for judged in values(SIZES_KEY):
            self.sizes[where] = largest_sizes(self.sizes[where], json.loads(judged))
        errors = values(HARNESS_ERROR_KEY)
        kinds = values(SKIP_KIND_KEY)
        self.outcomes.append(
            _TestOutcome(
                name=report.nodeid.split("::", 1)[-1],
                flag=flag,
                # A failure on a declared invariant reads as pytest's xfail; here it is the failure it was.
                outcome="failed" if hasattr(report, "wasxfail") else report.outcome,
                examples=int(dict(properties).get(EXAMPLES_KEY, 0)),
                violations=[json.loads(v) for v in values(VIOLATION_KEY)],
                harness_error=errors[0] if errors else None,
                skip_kind=kinds[0]
                if kinds
                else (NOT_RUN if report.skipped and not hasattr(report, "wasxfail") else None),
                skip_reason=skip_reason(report) if report.skipped else "",
                set_aside=int(dict(properties).get(SET_ASIDE_KEY, 0)),
                judged=int(dict(properties).get(JUDGED_KEY, 0)),
                set_aside_by=json.loads(dict(properties).get(SET_ASIDE_BY_KEY, "{}")),
                too_few_items=int(dict(properties).get(TOO_FEW_ITEMS_KEY, 0)),
                mesh=dict(properties).get(MESH_KEY),
                in_groups=bool(dict(properties).get(IN_GROUPS_KEY, False)),
                statistics=json.loads(values(STATISTICS_KEY)[0]) if values(STATISTICS_KEY) else None,
                measurements=json.loads(values(MEASUREMENTS_KEY)[0]) if values(MEASUREMENTS_KEY) else None,
            )
        )

    @property
    def declared(self) -> list[str]:
        """The flags of the contract's subject, in the order it declares them."""
        return [invariant.flag for invariant in subject_of(self.contract).invariants]

    def results(self) -> list[InvariantResult]:
        # Every invariant of the subject, those the contract does not promise too (their tests
        # were deselected): the certificate says what was not promised as well as what was.
        seen = {o.flag for o in self.outcomes} | {v["flag"] for o in self.outcomes for v in o.violations}
        flags = self.declared + sorted(f for f in seen if f not in self.declared)  # tests marked with an unlisted flag
        return [self._result(flag) for flag in flags]

    def _nothing_ran(self, flag: str) -> str:
        """Why no test of ``flag`` ran: --ranks left out the only ranks that judge it, or the selection."""
        where = REGISTRY[flag].where if flag in REGISTRY else Where.BOTH
        if self.ranks == "simulated" and where in (Where.GROUPS, Where.MESH):
            return ONLY_IN_GROUPS
        if self.ranks == "groups" and where is Where.IN_PROCESS:
            return ONLY_SIMULATED
        return NO_TEST_RAN

    def _result(self, flag: str) -> InvariantResult:
        if flag in REGISTRY and REGISTRY[flag].where is Where.MESH:  # judged by every test's mesh variants
            own = [o for o in self.outcomes if o.mesh is not None and o.skip_kind != NOT_PROMISED]
        else:
            own = [o for o in self.outcomes if o.flag == flag]
        charged = [(o, v) for o in self.outcomes for v in o.violations if v["flag"] == flag]
        result = InvariantResult(flag, title(flag), NOT_PROMISED)
        result.tests = [o.name for o in own if o.outcome != "skipped"]
        result.examples = sum(o.examples for o in own)
        # A test judged its invariant only when it ran to the end: one that stopped on another
        # invariant's violation may never have reached its own check.
        judged = [o for o in own if o.outcome == "passed"]
        result.judged = sum(o.judged for o in judged)
        result.statistics = merge_summaries([o.statistics for o in own if o.statistics is not None])
        result.measurements = measurements.merge([o.measurements for o in own if o.measurements is not None])
        subject = subject_of(self.contract)
        if flag == subject.crash_flag and judged:
            # Every case any test judged ran without a crash: evidence for it too, beyond its own edge cases.
            result.judged += sum(o.judged for o in self.outcomes if o.flag != flag and o.outcome == "passed")
        stopped = [o for o in own if o.outcome == "failed" and o.harness_error is None]
        errors = [o for o in own if o.harness_error is not None]
        if flag in self.contract.turned_off:
            result.status, result.details = TURNED_OFF, ["turned off with --without"]
        elif not self.contract.promises(flag):
            result.details = [f"contract {self.contract.name!r} does not promise it"]
        elif charged:
            result.status = FAILED
            result.failed_tests = sorted({o.name for o, _ in charged})
            result.counterexamples = _distinct([dict(v, test=o.name, in_groups=o.in_groups) for o, v in charged])
        elif errors:  # one of its checks could not run to the end: not held, whatever the others said
            result.status = ERROR
            result.details = [f"{o.name}: {o.harness_error}" for o in errors]
        elif judged and _judged_simulated_only(flag, own):
            # Held rests on where the sampler runs as in a job too: a subject that acts otherwise
            # in a group (rebalancing across the group's ranks) is not held on simulated ranks alone.
            result.status = NOT_JUDGED
            result.details = [
                f"judged on {counted(result.judged, 'case')} on simulated ranks only: in real process groups, where "
                f"it is checked too, no case was judged"
            ] + [_judged_line(o, subject) for o in own if o.in_groups and (o.set_aside or o.too_few_items)]
        elif judged:
            floor = 1 if flag in REGISTRY and REGISTRY[flag].measured else self.floor
            result.status = HELD if result.judged >= floor else NOT_JUDGED
            crashed = [
                _judged_line(o, subject) for o in judged if o.set_aside or (o.too_few_items and result.status != HELD)
            ]
            if result.status == HELD:
                not_run = [f"{o.skip_kind}: {o.name}: {o.skip_reason}" for o in own if o.outcome == "skipped"]
                result.details = not_run + [f"held: {line}" for line in crashed]
            else:
                result.details = [
                    f"judged on {result.judged} case{'' if result.judged == 1 else 's'} in all, fewer than the floor "
                    f"of {self.floor}: too few to call it held"
                ] + crashed
        elif stopped or any(o.skip_kind == NOT_JUDGED for o in own):
            result.status = NOT_JUDGED
            result.details = [
                f"{o.name}: stopped on a violation of {', '.join(sorted({v['flag'] for v in o.violations}))} first"
                for o in stopped
            ] + [f"{o.name}: {o.skip_reason}" for o in own if o.skip_kind == NOT_JUDGED]
        else:
            skipped = [o for o in own if o.outcome == "skipped"]
            kinds = {o.skip_kind for o in skipped}
            # Not applicable (or not promised) only if no variant could apply: one that could
            # but did not run here (a package missing, no GPU) leaves the invariant not run. A
            # variant that said the sampler does not promise it (no __len__) decides for the
            # others that could not apply (the group variants of a test judged on simulated ranks).
            result.status = NOT_RUN
            if kinds == {NOT_APPLICABLE}:
                result.status = NOT_APPLICABLE
            elif NOT_PROMISED in kinds and kinds <= {NOT_APPLICABLE, NOT_PROMISED}:
                result.status = NOT_PROMISED
            result.details = [f"{o.name}: {o.skip_reason}" for o in skipped] or [self._nothing_ran(flag)]
        declared = self.contract.expected_failure(flag)
        if declared and result.status in (HELD, FAILED):  # a strict xfail: as declared, or held against it
            result.status = XPASSED if result.status == HELD else XFAILED
            result.details.insert(0, f"declared to fail with --expect-failure: {declared}")
        if result.statistics is not None and result.status == HELD:
            result.details.append(statistics_line(result.statistics))
        if result.measurements is not None:
            result.details.append(measurements.describe(result.measurements))
        return result


def _judged_simulated_only(flag: str, own: list[_TestOutcome]) -> bool:
    """An invariant checked both on simulated ranks and in real groups whose group variants
    ran, and judged nothing: every case they drew set aside, or too small to judge."""
    if flag not in REGISTRY or REGISTRY[flag].where is not Where.BOTH:
        return False
    ran_in_groups = [o for o in own if o.in_groups and (o.outcome == "passed" or o.skip_kind == NOT_JUDGED)]
    return bool(ran_in_groups) and not any(o.judged for o in ran_in_groups)


def _judged_line(outcome: _TestOutcome, subject: Subject) -> str:
    """What one test judged its invariant on, and what it could not judge it on:
    ``test: judged on 0 cases; 17 examples read no item, so could not fail it; 75 examples set
    aside because the dataset yielded items without a valid id (see item_ids)``."""
    parts = [f"{outcome.name}: judged on {counted(outcome.judged, 'case')}"]
    if outcome.too_few_items:
        least = REGISTRY[outcome.flag].judged_from if outcome.flag in REGISTRY else 1
        read = "no item" if least <= 1 else f"fewer than {least} items"
        parts.append(f"{counted(outcome.too_few_items, 'example')} read {read}, so could not fail it")
    if outcome.set_aside:
        parts.append(set_aside_words(outcome.set_aside, outcome.set_aside_by, subject))
    return "; ".join(parts)


def set_aside_reasons(by_flag: Mapping[str, int], subject: Subject) -> list[str]:
    """Why examples were set aside, one reason per flag their faults were charged to, most
    first: ``75 because the dataset yielded items without a valid id (see item_ids)``."""
    reasons = []
    for flag, count in sorted(by_flag.items(), key=lambda item: (-item[1], item[0])):
        if flag == subject.crash_flag:
            what = "raised"
        elif flag == subject.invalid_item_flag:
            what = subject.invalid_items
        else:
            what = f"broke [{title(flag)}]"
        reasons.append(f"{count} because the {subject.noun} {what} (see {flag})")
    return reasons


def set_aside_words(set_aside: int, by_flag: Mapping[str, int], subject: Subject) -> str:
    """``75 examples set aside because the dataset yielded items without a valid id (see
    item_ids)``; with several reasons, ``58 examples set aside: 40 because ..., 18 because ...``."""
    reasons = set_aside_reasons(by_flag, subject)
    lead = f"{counted(set_aside, 'example')} set aside"
    if len(reasons) == 1 and sum(by_flag.values()) == set_aside:
        return f"{lead} {reasons[0].partition(' ')[2]}"
    return f"{lead}: {', '.join(reasons)}" if reasons else lead


def _distinct(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per distinct message and case (the same counterexample found by several
    tests once), standing for the cases of all of them."""
    seen: dict[tuple[str, str | None], dict[str, Any]] = {}
    for record in records:
        key = (record["message"], record["case"])
        if key in seen:
            seen[key]["cases"] = seen[key].get("cases", 1) + record.get("cases", 1)
        else:
            seen[key] = dict(record)
    return list(seen.values())


@dataclass(frozen=True)
class Verdict:
    state: str  # CONFORMS, CONFORMS_AS_DECLARED, DOES_NOT_CONFORM, MISDECLARED, PARTIAL, INTERRUPTED, SUITE_ERROR or NO_VERDICT
    line: str

    @property
    def conforms(self) -> bool:
        return self.state == CONFORMS


def verdict(
    spec: str, contract: Contract, results: list[InvariantResult], interrupted: bool = False, selection: str = ""
) -> Verdict:
    """The run's one line: it says "conforms" only when every promised invariant was checked
    in this run and held. ``selection``: how the user chose the tests the run ran (``-k
    covers``, a test id), which makes it a rerun of those tests rather than a certification."""
    promised = [r for r in results if r.status != NOT_PROMISED]
    by_status = {status: [r.flag for r in promised if r.status == status] for status in STATUSES}
    counts = ", ".join(
        [f"{len(promised)} invariants: {len(by_status[HELD])} held", f"{len(by_status[FAILED])} failed"]
        + [f"{len(by_status[s])} {s}" for s in (XFAILED, XPASSED, *UNCHECKED) if by_status[s]]
    )
    unchecked = "; ".join(f"{s}: {', '.join(by_status[s])}" for s in UNCHECKED if by_status[s])
    subject = f"{spec} against contract {contract.name!r}"
    if interrupted:
        failed = f"; failed so far: {', '.join(by_status[FAILED])}" if by_status[FAILED] else ""
        return Verdict(
            INTERRUPTED,
            f"INTERRUPTED: the run stopped before it finished, so there is no verdict on {subject} ({counts}){failed}",
        )
    if by_status[FAILED]:
        also = f"; unchecked: {unchecked}" if unchecked else ""
        return Verdict(
            DOES_NOT_CONFORM,
            f"VERDICT: {spec} does NOT conform to contract {contract.name!r} ({counts}); "
            f"failed: {', '.join(by_status[FAILED])}{also}",
        )
    if by_status[ERROR]:
        return Verdict(
            SUITE_ERROR,
            f"ERROR: the suite failed while checking {subject}, so there is no verdict ({counts}); {unchecked}",
        )
    if by_status[XPASSED]:
        return Verdict(
            MISDECLARED,
            f"VERDICT: {spec} breaks less of contract {contract.name!r} than declared ({counts}): "
            f"{', '.join(by_status[XPASSED])} held, which --expect-failure declared broken; remove the declaration",
        )
    if not by_status[HELD] and not by_status[XFAILED]:
        return Verdict(
            NO_VERDICT, f"NO VERDICT: no invariant of contract {contract.name!r} was checked for {spec} ({counts})"
        )
    if unchecked:
        rerun = f"a rerun of {selection}, not a certification: " if selection else ""
        return Verdict(
            PARTIAL,
            f"PARTIAL: {rerun}no failure, but not every invariant was checked for {subject} ({counts}); {unchecked}",
        )
    if by_status[XFAILED]:
        declared = "; ".join(f"{flag} ({contract.expected_failure(flag)})" for flag in by_status[XFAILED])
        return Verdict(
            CONFORMS_AS_DECLARED,
            f"VERDICT: {spec} conforms to contract {contract.name!r} as declared ({counts}); "
            f"failed as declared: {declared}",
        )
    return Verdict(CONFORMS, f"VERDICT: {spec} conforms to contract {contract.name!r} ({counts})")


def sizes_line(sizes: dict[str, dict[str, int]]) -> str | None:
    """What the verdict claims no more than: ``sizes judged (the verdict claims no more):
    simulated ranks up to N=9,998, W=64, ...; real process groups up to N=..., W=4``."""
    places = {SIMULATED_RANKS: "simulated ranks", IN_GROUPS: "real process groups"}
    parts = [
        f"{places[where]} up to "
        + ", ".join(f"{SIZE_FIELDS[name]}={judged[name]:,}" for name in SIZE_FIELDS if name in judged)
        for where, judged in sizes.items()
        if judged
    ]
    return f"sizes judged (the verdict claims no more): {'; '.join(parts)}" if parts else None


def statistics_line(summary: dict[str, Any]) -> str:
    """A held statistical invariant's frequency tests, in a line."""
    draws = summary["fewest_draws"], summary["most_draws"]
    closest = summary["closest"]
    return (
        f"frequency tests: {summary['tests_run']} run, {draws[0] if draws[0] == draws[1] else f'{draws[0]} to {draws[1]}'} "
        f"draws each; the closest to failing bounded its p-value by {closest['p_value_bound']:.3g} against a "
        f"threshold of {closest['threshold']:.3g} (at most {summary['false_alarm_budget']:g} false alarm per certification)"
    )
