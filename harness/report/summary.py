"""The conformance summary: gathers the certification tests' reports, prints the verdict
table at the end of the run and writes the certificate."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import pytest

from sampler_conformance.core.contracts import Contract
from sampler_conformance.core.cost import READINGS, Cost
from sampler_conformance.core.evidence import counted
from sampler_conformance.core.size_plan import SizePlan
from sampler_conformance.core.subject import Plug
from sampler_conformance.subjects import subject_of

from .certificate import build_certificate, write_certificate
from .counterexamples import shown_counterexamples
from .reproductions import Reproduction, attach, folder_for, reproduce
from .results import (
    CONFORMS,
    CONFORMS_AS_DECLARED,
    DOES_NOT_CONFORM,
    ERROR,
    FAILED,
    HELD,
    MISDECLARED,
    NO_VERDICT,
    NOT_APPLICABLE,
    NOT_JUDGED,
    NOT_PROMISED,
    NOT_RUN,
    NOTHING_RAN,
    PARTIAL,
    XFAILED,
    XPASSED,
    InvariantResult,
    ResultCollector,
    Verdict,
    sizes_line,
    verdict,
)


class LeftOut(Protocol):
    """The tests collection left out (``pytest_plugin.state.Deselected``)."""

    @property
    def others(self) -> int: ...

    @property
    def unpromised(self) -> int: ...


class Certifying(Protocol):
    """What the run certifies, and how (the plugin's state)."""

    @property
    def plug(self) -> Plug: ...

    @property
    def contract(self) -> Contract: ...

    @property
    def options(self) -> dict[str, Any]: ...

    @property
    def seed(self) -> int | str | None: ...

    @property
    def example_database(self) -> Path | None: ...

    @property
    def deselected(self) -> LeftOut | None: ...

    @property
    def selection(self) -> str: ...

    @property
    def cost(self) -> Cost | None: ...

    @property
    def cost_not_measured(self) -> str: ...


def _detail_lines(results: list[InvariantResult], contract: Contract) -> list[str]:
    """Why each invariant (or some variants of a held one) was not checked, variants folded:
    ``not applicable: seed_effective: test_seed_changes_order (2 variants): sampler has no `seed` parameter``."""
    lines = []
    for reason in NOTHING_RAN:
        unrun = [r.flag for r in results if r.status == NOT_RUN and r.details == [reason]]
        if unrun:
            lines.append(f"not run: {', '.join(unrun)}: {reason}")
    # (kind, test, reason) -> {flag: its variants}: one reason of one test, said once for every
    # invariant it holds of (the numeric edges a projected cost rules out, for four invariants)
    said: dict[tuple[str, str, str], dict[str, list[str]]] = {}
    for result in results:
        # Promised by the contract, but not to this sampler: it lacks the optional method the invariant is about.
        conditional = result.status == NOT_PROMISED and contract.promises(result.flag)
        if (result.status in (HELD, NOT_JUDGED, NOT_APPLICABLE, NOT_RUN, ERROR) or conditional) and not (
            len(result.details) == 1 and result.details[0] in NOTHING_RAN
        ):
            for detail in result.details:
                kind, test, reason = _split_detail(result.status, detail)
                said.setdefault((kind, test.split("[")[0], reason), {}).setdefault(result.flag, []).append(test)
    for (kind, name, reason), by_flag in said.items():
        if len(by_flag) == 1:
            ((flag, tests),) = by_flag.items()
            shown = f"{flag}: " + (tests[0] if len(tests) == 1 else f"{name} ({len(tests)} variants)")
        else:
            shown = f"{', '.join(by_flag)}: {name}"
        lines.append(f"{kind}: {shown}: {reason}" if reason else f"{kind}: {shown}")
    return lines


# The invariants that judge what a sampler does with the arguments a user leaves out.
DEFAULTS_FLAGS = ("defaults", "group_defaults")


def _adapter_note(current: Certifying, results: list[InvariantResult]) -> str | None:
    """Said when a factory is certified: its defaults, not the wrapped sampler's, were judged."""
    judged = [r.flag for r in results if r.flag in DEFAULTS_FLAGS and r.status in (HELD, FAILED)]
    if not current.plug.is_factory or not judged:
        return None
    return (
        f"note: {current.plug.spec} is a factory, not a sampler class: {' and '.join(judged)} judge the "
        f"defaults of its signature, which may differ from those of the sampler it builds"
    )


def _deselected_line(current: Certifying) -> str | None:
    """What pytest's "N deselected" stands for: ``deselected: 191 tests of invariants contract
    'torch' does not promise, 133 of other subjects``."""
    left_out = current.deselected
    if left_out is None or not (left_out.others or left_out.unpromised):
        return None
    parts = []
    if left_out.unpromised:
        off = " or --without turned off" if current.contract.turned_off else ""
        parts.append(
            f"{counted(left_out.unpromised, 'test')} of invariants contract {current.contract.name!r} does not "
            f"promise{off}"
        )
    if left_out.others:
        parts.append(f"{counted(left_out.others, 'test')} of other subjects, ranks or variants")
    return "deselected: " + ", ".join(parts)


def _split_detail(status: str, detail: str) -> tuple[str, str, str]:
    """(kind, test, reason) of a result's detail: "[KIND: ]TEST: REASON"."""
    kind = status
    if status == HELD:
        kind, _, detail = detail.partition(": ")
    test, _, reason = detail.partition(": ")
    return kind, test, reason


class ConformanceReport:
    """Gathers the certification tests' reports; prints the verdict, writes the certificate."""

    def __init__(self, current: Certifying, floor: int, draws: str, backends: Callable[[], set[str]]) -> None:
        self.current = current
        self.collector = ResultCollector(current.contract, floor, current.options["ranks"])
        self.draws = draws  # how the cases were drawn, in words
        self.backends = backends  # each world size's backend, or why its groups were skipped
        self.written: tuple[Path, Path] | None = None
        self.reproductions: dict[str, Reproduction] = {}  # each failed invariant's script, by flag
        self.interrupted = False

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.collector.add(report)

    def pytest_keyboard_interrupt(self, excinfo: Any) -> None:
        self.interrupted = True

    def _verdict(self) -> tuple[list[InvariantResult], Verdict]:
        results = self.collector.results()
        attach(results, self.reproductions)
        return results, verdict(
            self.current.plug.spec, self.current.contract, results, self.interrupted, self.current.selection
        )

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.interrupted = self.interrupted or exitstatus == pytest.ExitCode.INTERRUPTED
        results, outcome = self._verdict()
        if self.collector.outcomes and exitstatus == pytest.ExitCode.OK and outcome.state == NO_VERDICT:
            # Every certification test was skipped: nothing was proven, so no success exit.
            session.exitstatus = exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED
        if exitstatus == pytest.ExitCode.OK and outcome.state in (DOES_NOT_CONFORM, MISDECLARED):
            # Only set-aside crashes were charged (every test passed on the cases left), or an
            # invariant declared broken held (a strict xfail that passed): still a failure.
            session.exitstatus = exitstatus = pytest.ExitCode.TESTS_FAILED
        path = self.current.options["certificate"]
        if self.current.options["repro"] and any(r.status == FAILED for r in results):
            self._reproduce(results)
        if not path:
            return
        from hypothesis import settings

        options = self.current.options
        run = {
            "backend": f"{options['backend']} ({', '.join(sorted(self.backends()))})",
            "world_sizes": list(options["world_sizes"]),
            "hypothesis_profile": settings.get_current_profile_name(),
            "hypothesis_seed": self.current.seed,
            "judged_floor": self.collector.floor,
            "numeric_edges": list(self._edges_judged()),
            "example_database": str(self.current.example_database) if self.current.example_database else None,
            "exit_status": int(exitstatus),
        }
        certificate = build_certificate(
            plug=self.current.plug,
            contract=self.current.contract,
            results=results,
            findings=self.collector.findings,
            verdict=outcome,
            run=run,
            sizes=self.collector.sizes,
            cost=self._cost(),
        )
        self.written = write_certificate(path, certificate, self.draws)

    def _reproduce(self, results: list[InvariantResult]) -> None:
        """Each failed invariant's script, written and run before the summary names it."""
        options, plug = self.current.options, self.current.plug
        folder = folder_for(options["repro_dir"], options["certificate"], plug.spec)
        subject = subject_of(self.current.contract)
        self.reproductions = reproduce(results, subject, plug, self.current.contract, folder)
        attach(results, self.reproductions)

    def _edges_judged(self) -> tuple[int, ...]:
        """The numeric edges --scale asked for: the sizes judged line says how far the
        measured cost let them be judged."""
        subject = subject_of(self.current.contract)
        return subject.edges if self.current.options["scale"] else ()

    def _edges_line(self) -> str:
        """Where the subject has numeric edges and --scale did not judge them: that the verdict claims nothing there."""
        subject = subject_of(self.current.contract)
        if not subject.edges or self.current.options["scale"]:
            return ""
        return f"numeric edges not judged: {subject.edges_said}"

    def _cost_lines(self) -> list[str]:
        """One rank's cost, measured before the draws, and where it was not, why; the sizes the
        plan drawn from it left out."""
        current = self.current
        if current.cost is None:
            return [f"cost per rank: not measured ({current.cost_not_measured})"] if current.cost_not_measured else []
        subject = subject_of(current.contract)
        lines = current.cost.lines(subject.cost_noun or subject.yields[0], self._production())
        plan = SizePlan.of(current.cost, current.options["case_budget"])
        if plan is not None:
            ranks = current.options["ranks"]
            simulated = subject.drawn[1] if ranks != "groups" else 0
            groups = current.options["world_sizes"] if ranks != "simulated" else ()
            lines += plan.lines(simulated, groups)
        return lines

    def _production(self) -> tuple[float, int] | None:
        size = self.current.options["production_size"]
        return None if size is None else (size, self.current.options["production_world"])

    def _cost(self) -> dict[str, Any]:
        """The certificate's record of the cost: the readings, the summary's lines, the projection."""
        cost, production = self.current.cost, self._production()
        projected = None
        if cost is not None and production is not None:
            peak, first = cost.projected(*production)
            projected = {"size": production[0], "world_size": production[1], "peak_bytes": peak, "first_s": first}
        readings = cost.to_json() if cost is not None else {key: [] for key in READINGS}
        return {
            "not_measured": self.current.cost_not_measured,
            **readings,
            "summary": self._cost_lines(),
            "projected": projected,
        }

    def _all_in(self) -> str:
        """Where a reader finds every counterexample the summary leaves out."""
        if self.written:
            return f"every counterexample is in {self.written[1]}"
        return "write every counterexample to a certificate with --certificate=PATH"

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.collector.outcomes and not self.written and not self.interrupted:
            return
        results, outcome = self._verdict()
        write = terminalreporter.write_line
        terminalreporter.section("sampler conformance")
        for result in results:
            if result.status != NOT_PROMISED:
                cases = (
                    f"  ({counted(result.judged, 'case')})"
                    if result.status in (HELD, NOT_JUDGED) and result.judged
                    else ""
                )
                write(f"{result.status:>14}  {result.flag:31s} {result.title}{cases}")
            if result.status in (XFAILED, XPASSED):
                write(" " * 16 + result.details[0])  # the declaration, with its reason
            if result.status in (FAILED, XFAILED):
                if result.flag in self.reproductions:
                    write(" " * 16 + self.reproductions[result.flag].line())
                for line in shown_counterexamples(result.counterexamples, " " * 16, self._all_in(), whole=False):
                    write(line)
        not_promised = [r.flag for r in results if r.status == NOT_PROMISED and r.tests]
        if not_promised:
            write(f"not promised by contract {self.current.contract.name!r}: {', '.join(not_promised)}")
        left_out = _deselected_line(self.current)
        if left_out:
            write(left_out)
        for line in _detail_lines(results, self.current.contract):
            write(line)
        adapter_note = _adapter_note(self.current, results)
        if adapter_note:
            write(adapter_note)
        for finding in self.collector.findings:
            write(f"finding: {finding}")
        judged_up_to = sizes_line(self.collector.sizes)
        if judged_up_to:
            write(judged_up_to)
        edges = self._edges_line()
        if edges:
            write(edges)
        for line in self._cost_lines():
            write(line)
        if self.written:
            write(f"certificate: {self.written[0]} and {self.written[1]}")
        passes = outcome.state in (CONFORMS, CONFORMS_AS_DECLARED)
        write(
            outcome.line,
            green=passes,
            red=outcome.state != PARTIAL and not passes,
            yellow=outcome.state == PARTIAL,
            bold=True,
        )
