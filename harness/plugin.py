"""The pytest plugin: options, report header, fixtures and the conformance summary.

Every option is read with the same precedence: command line, then environment
variable, then ini file, then the default.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hypothesis
import pytest
from hypothesis.errors import Unsatisfiable

from .core.contracts import Contract
from .core.evidence import FAULT, Evidence, HarnessError, NotApplicable, not_applicable
from .core.subject import Plug, SpecError
from .execution import simulator
from .execution.backend import BACKENDS, DEFAULT_BACKEND, BackendChoice, choose_backend, cuda_device_count
from .execution.scenario import Ranks, handle_faults_with
from .pytest_plugin import crashes, profiles
from .pytest_plugin.folders import CERTIFICATION_DIRS, IN_PROCESS_DIR
from .report.certificate import build_certificate, write_certificate
from .report.results import (
    CRASHED_EVERYWHERE,
    DOES_NOT_CONFORM,
    ERROR,
    EXAMPLES_KEY,
    FAILED,
    FINDING_KEY,
    HARNESS_ERROR_KEY,
    HELD,
    INVARIANT_KEY,
    JUDGED_KEY,
    MAX_SHOWN_COUNTEREXAMPLES,
    NO_TEST_RAN,
    NO_VERDICT,
    NOT_APPLICABLE,
    NOT_JUDGED,
    NOT_PROMISED,
    NOT_RUN,
    PARTIAL,
    SET_ASIDE_KEY,
    SKIP_KIND_KEY,
    VIOLATION_KEY,
    InvariantResult,
    ResultCollector,
    Verdict,
    verdict,
)
from .subjects import (
    CONTRACT_SYNTAX,
    DEFAULT_CONTRACT,
    REGISTRY,
    SUBJECTS,
    contract_named,
    describe_contracts,
    subject_of,
)

if sys.version_info >= (3, 11):
    from builtins import BaseExceptionGroup
else:  # Python 3.10: the backport Hypothesis depends on there
    from exceptiongroup import BaseExceptionGroup

CERTIFICATION_MARK = "certification"
DEFAULT_WORLD_SIZES = "1,2,4"  # sized for 2 cores; GPU nodes: --backend=nccl --world-sizes=8


@dataclass(frozen=True)
class Option:
    name: str  # command line flag without the dashes; the ini key has underscores
    env: str
    default: str
    help: str
    parse: Callable[[str], Any] = str

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise pytest.UsageError(
            f"--rank-timeout={text!r} is not a number; give seconds, e.g. --rank-timeout=60"
        ) from None
    if value <= 0:
        raise pytest.UsageError(f"--rank-timeout={text!r} must be positive; give seconds, e.g. --rank-timeout=60")
    return value


def _backend_name(text: str) -> str:
    if text not in BACKENDS:
        raise pytest.UsageError(f"--backend={text!r} is not a backend; choose one of: {', '.join(BACKENDS)}")
    return text


def _world_sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part) for part in text.split(","))
    except ValueError:
        sizes = ()
    if not sizes or min(sizes) < 1:
        raise pytest.UsageError(
            f"--world-sizes={text!r} is not a comma-separated list of positive ints; e.g. --world-sizes=1,2,4"
        )
    return tuple(sorted(set(sizes)))


def _flag_list(text: str) -> frozenset[str]:
    flags = frozenset(part.strip() for part in text.split(",") if part.strip())
    unknown = sorted(flags - set(REGISTRY))
    if unknown:
        raise pytest.UsageError(
            f"--without={text!r}: unknown invariant(s) {', '.join(unknown)}; see --list-contracts for the flags"
        )
    return flags


def _contract_name(text: str) -> str:
    try:
        contract_named(text)
    except ValueError as exc:
        raise pytest.UsageError(f"--contract={text!r}: {exc}") from None
    return text


OPTIONS = (
    Option(
        "sampler",
        "CONFORMANCE_SAMPLER",
        "",
        "what is under test, as MODULE:ATTR or path/to/file.py:ATTR, called the way the contract's subject says "
        "(an index sampler: Attr(dataset, num_replicas=W, rank=r, shuffle=, seed=, drop_last=)) "
        f"(default: the subject's reference, {SUBJECTS[contract_named(DEFAULT_CONTRACT).subject].default_spec} "
        "for the index-sampler contracts)",
    ),
    Option(
        "contract",
        "CONFORMANCE_CONTRACT",
        DEFAULT_CONTRACT,
        f"contract the sampler promises: {CONTRACT_SYNTAX}, e.g. torch+resumable (default {DEFAULT_CONTRACT})",
        _contract_name,
    ),
    Option(
        "without",
        "CONFORMANCE_WITHOUT",
        "",
        "comma-separated invariants to turn off, e.g. --without=seed_effective,pads_from_head "
        "(see --list-contracts); the report lists them as turned off",
        _flag_list,
    ),
    Option(
        "certificate",
        "CONFORMANCE_CERTIFICATE",
        "",
        "write the certificate to PATH.json and PATH.md (also when the run fails)",
    ),
    Option(
        "rank-timeout",
        "CONFORMANCE_RANK_TIMEOUT",
        str(simulator.DEFAULT_TIMEOUT_S),
        "seconds one rank may spend on one step before it is reported as hung: in-process one call into its "
        "sampler (a constructor, a pass, len()), in a process group one case (default %(default)s)",
        _positive_seconds,
    ),
    Option(
        "backend",
        "CONFORMANCE_BACKEND",
        DEFAULT_BACKEND,
        "torch.distributed backend of the rank pools: auto (nccl with one CUDA device per rank, else gloo), "
        "gloo or nccl (default %(default)s)",
        _backend_name,
    ),
    Option(
        "world-sizes",
        "CONFORMANCE_WORLD_SIZES",
        DEFAULT_WORLD_SIZES,
        "comma-separated world sizes of the real process groups in conformance/ (default %(default)s)",
        _world_sizes,
    ),
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sampler conformance")
    for option in OPTIONS:
        text = option.help.replace("%(default)s", option.default)
        group.addoption(f"--{option.name}", dest=option.dest, default=None, help=f"{text}; env {option.env}")
        parser.addini(option.dest, help=text, default=None)
    group.addoption("--list-contracts", action="store_true", help="print each contract and its invariants, then exit")


def setting(config: pytest.Config, option: Option) -> Any:
    """Command line, then environment, then ini, then default; parsed."""
    value = config.getoption(option.dest)
    if value is None:
        value = os.environ.get(option.env) or None
    if value is None:
        value = config.getini(option.dest) or None
    return option.parse(value if value is not None else option.default)


@dataclass
class ConformanceState:
    plug: Plug
    contract: Contract
    options: dict[str, Any]
    findings_by_test: dict[str, list[str]] = field(default_factory=dict)
    # The seed of every test's draws (None: the search profile draws afresh), and the
    # search profile's example database (None: no database, the certification's default).
    seed: int | str | None = profiles.CERTIFICATION_SEED
    example_database: Path | None = None
    # Findings of the session, not of one test (the seeds refused): reported with the next test's report.
    pending_findings: list[str] = field(default_factory=list)


_STATE_KEY = pytest.StashKey[ConformanceState]()


def pytest_cmdline_main(config: pytest.Config) -> int | None:
    if config.getoption("list_contracts"):
        print(describe_contracts(), end="")
        return 0
    return None


@pytest.hookimpl(trylast=True)  # after Hypothesis's plugin has loaded --hypothesis-profile
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{CERTIFICATION_MARK}: a test that certifies the sampler under test")
    config.addinivalue_line("markers", "invariant(flag): the contract invariant a certification test checks")
    options = {option.dest: setting(config, option) for option in OPTIONS}
    try:
        contract = contract_named(options["contract"]).without(options["without"])
    except ValueError as exc:
        raise pytest.UsageError(f"--without={','.join(sorted(options['without']))}: {exc}") from None
    subject = subject_of(contract)
    try:
        plug = subject.load(options["sampler"] or subject.default_spec)
    except SpecError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.pluginmanager.import_plugin(subject.fixtures)  # the fixtures its tests use
    simulator.configure(timeout_s=options["rank_timeout"])
    # A sampler's fault inside a Hypothesis test that judges another invariant is set aside.
    handle_faults_with(crashes.set_aside_or_raise)
    profiles.use_group_world_sizes(len(options["world_sizes"]))
    current = ConformanceState(plug=plug, contract=contract, options=options)
    current.seed = profiles.fixed_seed(config.getoption("hypothesis_seed", None))
    if current.seed is None:
        current.example_database = profiles.search_database(config.invocation_params.dir, plug.spec)
    config.stash[_STATE_KEY] = current
    if not hasattr(config, "workerinput"):  # pytest-xdist workers leave reporting to the controller
        config.pluginmanager.register(ConformanceReport(config, current), "conformance-report")


def pytest_unconfigure(config: pytest.Config) -> None:
    simulator.close()  # the in-process runner's sampler process


def state(config: pytest.Config) -> ConformanceState:
    return config.stash[_STATE_KEY]


def pytest_report_header(config: pytest.Config) -> list[str]:
    import torch
    from hypothesis import settings

    current = state(config)
    plug = current.plug
    missing = ", ".join(plug.missing) or "none"
    return [
        f"sampler: {plug.spec} ({plug.source_file or 'source file unknown'})",
        f"sampler parameters missing: {missing}",
        f"contract: {current.contract.name} - {current.contract.description}",
        f"torch: {torch.__version__}, python: {platform.python_version()}, "
        f"hypothesis profile: {settings.get_current_profile_name()}, "
        f"{profiles.describe_draws(current.seed, current.example_database)}",
        process_groups_line(config),
    ]


def process_groups_line(config: pytest.Config) -> str:
    requested = setting(config, option_named("backend"))
    shown = ", ".join(
        f"W={c.world_size}: {c.name or 'skipped, ' + str(c.skip_reason)}" for c in backend_choices(config)
    )
    return f"process groups (--backend={requested}, {cuda_device_count()} CUDA devices here): {shown}"


def backend_choices(config: pytest.Config) -> list[BackendChoice]:
    """The backend of each world size's groups: as conformance/'s pools choose it, from the
    GPUs here, or under torchrun from every rank's (``execution.torchrun.pool``)."""
    from .execution.torchrun.pool import started_pools

    requested = setting(config, option_named("backend"))
    started = started_pools(config)
    choose = started.choose if started is not None else choose_backend
    return [choose(requested, w, cuda_device_count()) for w in setting(config, option_named("world-sizes"))]


def option_named(name: str) -> Option:
    return next(option for option in OPTIONS if option.name == name)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    seed = state(config).seed
    for item in items:
        path = Path(item.path).resolve()
        if any(path.is_relative_to(folder) for folder in CERTIFICATION_DIRS):
            item.add_marker(CERTIFICATION_MARK)
            function = _hypothesis_test(item)
            if seed is not None and function is not None:
                hypothesis.seed(seed)(function)  # the same draws on every run, and no example database
        flag = _invariant(item)
        if flag is not None and flag not in REGISTRY:
            raise pytest.UsageError(
                f"{item.nodeid} checks invariant {flag!r}, which the registry (sampler_conformance.core.invariants) does not "
                f"declare; declare it there (title, bug class, known-bad sampler) first"
            )


def _hypothesis_test(item: pytest.Item) -> Callable[..., Any] | None:
    """The item's test function if Hypothesis draws its cases (``@given``), else None."""
    function = getattr(item, "obj", None)
    return function if function is not None and hasattr(function, "hypothesis") else None


def _invariant(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("invariant")
    return marker.args[0] if marker is not None else None


def pytest_runtest_setup(item: pytest.Item) -> None:
    flag = _invariant(item)
    crashes.begin_test(flag)
    function = _hypothesis_test(item)
    if function is not None:
        crashes.count_examples(function)
    if flag is not None:
        current = state(item.config)
        promise(current.contract, flag)
        in_process = Path(item.path).resolve().is_relative_to(IN_PROCESS_DIR)
        if in_process and current.plug.needs_process_group:
            not_applicable(
                "the sampler takes its rank from the process group; only conformance/ (real groups) can run it"
            )
        if not current.plug.needs_process_group:  # one that does is probed in its group (conformance/)
            probe(item.config, simulator.SIMULATED)
    simulator.begin_test()  # after the probe: a case it hung on does not stop this test


def probe(config: pytest.Config, ranks: Ranks, world_size: int = 1) -> None:
    """What the subject learns of the plug once per process before its first test draws a case
    (the index sampler: the seeds it accepts), on ``ranks``; a finding is reported once, with
    the next test's report."""
    current = state(config)
    subject = subject_of(current.contract)
    if subject.probe is None:
        return
    finding = subject.probe(ranks, current.plug, current.contract, world_size)
    if finding is not None:
        current.pending_findings.append(finding)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    # Before pytest's own hooks turn it into a plain skip: raised by a test or a fixture (``not_applicable``).
    inapplicable = call.excinfo is not None and call.excinfo.errisinstance(NotApplicable)
    report = yield
    flag = _invariant(item)
    if flag is None:
        return report
    # Carried on the report, so it reaches the pytest-xdist controller and --junitxml too.
    properties: list[tuple[str, object]] = [(INVARIANT_KEY, flag)]
    if report.when == "call":
        examples = crashes.examples() or 1  # a test without Hypothesis runs its one case
        properties.append((EXAMPLES_KEY, examples))
        current = state(item.config)
        properties += [(FINDING_KEY, f) for f in current.findings_by_test.pop(item.nodeid, [])]
        properties += [(FINDING_KEY, f) for f in current.pending_findings]
        current.pending_findings.clear()
        crash_flag = subject_of(current.contract).crash_flag
        set_aside = crashes.take_set_aside()
        properties += _violation_properties(set_aside[:1], crash_flag)  # the smallest case each test crashed on
        properties.append((SET_ASIDE_KEY, len(set_aside)))
        # A test without Hypothesis judges its one fixed case, if it passes.
        properties.append((JUDGED_KEY, crashes.judged() if _hypothesis_test(item) else int(report.passed)))
        if (
            set_aside
            and call.excinfo is not None
            and call.excinfo.errisinstance((Unsatisfiable, crashes.EnoughSetAside))
        ):
            if call.excinfo.errisinstance(crashes.EnoughSetAside) and crashes.judged():
                # stopped early, having judged the cases that did not crash
                report.outcome, report.longrepr = "passed", None
            else:  # every example crashed, so nothing was judged: not a failure of this invariant
                report.outcome = "skipped"
                report.longrepr = (str(item.path), 0, f"{CRASHED_EVERYWHERE} (see {crash_flag})")
                properties.append((SKIP_KIND_KEY, NOT_JUDGED))
    if call.excinfo is not None and report.failed:
        properties += _failure_properties(call.excinfo.value, subject_of(state(item.config).contract).crash_flag)
    if report.skipped and not any(key == SKIP_KIND_KEY for key, _ in properties):
        properties.append((SKIP_KIND_KEY, NOT_APPLICABLE if inapplicable else NOT_RUN))
    report.user_properties = [*report.user_properties, *properties]
    return report


def _failure_properties(error: BaseException, crash_flag: str) -> list[tuple[str, object]]:
    """The violations a failure carries; a failure that carries none is the suite's own
    error, named by its exception."""
    evidence = [leaf for leaf in _leaves(error) if isinstance(leaf, Evidence)]
    properties = _violation_properties(evidence, crash_flag)
    for leaf in _leaves(error):
        if isinstance(leaf, HarnessError):
            properties.append((HARNESS_ERROR_KEY, str(leaf)))
        elif not isinstance(leaf, Evidence):
            first_line = (str(leaf).strip().splitlines() or [""])[0]
            properties.append((HARNESS_ERROR_KEY, f"{type(leaf).__name__}: {first_line}"))
    return properties


def _violation_properties(evidence: Sequence[Evidence], crash_flag: str) -> list[tuple[str, object]]:
    """Each violation as JSON with its Hypothesis draws. A sampler fault (it raised, hung or
    died) counts against the invariant that it runs without crashing, the subject's ``crash_flag``."""
    properties: list[tuple[str, object]] = []
    for leaf in evidence:
        draws = [note for note in getattr(leaf, "__notes__", []) if note.startswith("Draw ")]
        for record in leaf.records(draws):
            if record["flag"] == FAULT:
                record["flag"] = crash_flag
            properties.append((VIOLATION_KEY, json.dumps(record)))
    return properties


def _leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups: Hypothesis reports several distinct
    failures, and a replay that no longer fails (FlakyFailure), as groups."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> tuple[str, str, str] | None:
    """A harness error reads as a pytest error (E), not as a failure of the sampler."""
    properties = getattr(report, "user_properties", [])
    if (
        report.failed
        and any(k == HARNESS_ERROR_KEY for k, _ in properties)
        and not any(k == VIOLATION_KEY for k, _ in properties)
    ):
        return "error", "E", "ERROR"
    return None


def _detail_lines(results: list[InvariantResult]) -> list[str]:
    """Why each invariant (or some variants of a held one) was not checked, variants folded:
    ``not applicable: seed_effective: test_seed_changes_order (2 variants): sampler has no `seed` parameter``."""
    lines = []
    unrun = [r.flag for r in results if r.status == NOT_RUN and r.details == [NO_TEST_RAN]]
    if unrun:
        lines.append(f"not run: {', '.join(unrun)}: {NO_TEST_RAN}")
    for result in results:
        if result.status in (HELD, NOT_JUDGED, NOT_APPLICABLE, NOT_RUN, ERROR) and result.details != [NO_TEST_RAN]:
            variants: dict[tuple[str, str, str], list[str]] = {}
            for detail in result.details:
                kind, test, reason = _split_detail(result.status, detail)
                variants.setdefault((kind, test.split("[")[0], reason), []).append(test)
            for (kind, name, reason), tests in variants.items():
                shown = tests[0] if len(tests) == 1 else f"{name} ({len(tests)} variants)"
                lines.append(
                    f"{kind}: {result.flag}: {shown}: {reason}" if reason else f"{kind}: {result.flag}: {shown}"
                )
    return lines


# The invariants that judge what a sampler does with the arguments a user leaves out.
DEFAULTS_FLAGS = ("defaults", "group_defaults")


def _adapter_note(current: ConformanceState, results: list[InvariantResult]) -> str | None:
    """Said when a factory is certified: its defaults, not the wrapped sampler's, were judged."""
    judged = [r.flag for r in results if r.flag in DEFAULTS_FLAGS and r.status in (HELD, FAILED)]
    if not current.plug.is_factory or not judged:
        return None
    return (
        f"note: {current.plug.spec} is a factory, not a sampler class: {' and '.join(judged)} judge the "
        f"defaults of its signature, which may differ from those of the sampler it builds"
    )


def _split_detail(status: str, detail: str) -> tuple[str, str, str]:
    """(kind, test, reason) of a result's detail: "[KIND: ]TEST: REASON"."""
    kind = status
    if status == HELD:
        kind, _, detail = detail.partition(": ")
    test, _, reason = detail.partition(": ")
    return kind, test, reason


class ConformanceReport:
    """Gathers the certification tests' reports; prints the verdict, writes the certificate."""

    def __init__(self, config: pytest.Config, current: ConformanceState) -> None:
        self.config = config
        self.current = current
        self.collector = ResultCollector(current.contract, profiles.judged_floor())
        self.written: tuple[Path, Path] | None = None
        self.interrupted = False

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.collector.add(report)

    def pytest_keyboard_interrupt(self, excinfo: Any) -> None:
        self.interrupted = True

    def _verdict(self) -> tuple[list[InvariantResult], Verdict]:
        results = self.collector.results()
        return results, verdict(self.current.plug.spec, self.current.contract, results, self.interrupted)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.interrupted = self.interrupted or exitstatus == pytest.ExitCode.INTERRUPTED
        results, outcome = self._verdict()
        if self.collector.outcomes and exitstatus == pytest.ExitCode.OK and outcome.state == NO_VERDICT:
            # Every certification test was skipped: nothing was proven, so no success exit.
            session.exitstatus = exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED
        if exitstatus == pytest.ExitCode.OK and outcome.state == DOES_NOT_CONFORM:
            # Only set-aside crashes were charged (every test passed on the cases left): still a failure.
            session.exitstatus = exitstatus = pytest.ExitCode.TESTS_FAILED
        path = self.current.options["certificate"]
        if not path:
            return
        from hypothesis import settings

        options = self.current.options
        run = {
            "backend": f"{options['backend']} ({', '.join(sorted(self._backends()))})",
            "world_sizes": list(options["world_sizes"]),
            "hypothesis_profile": settings.get_current_profile_name(),
            "hypothesis_seed": self.current.seed,
            "judged_floor": self.collector.floor,
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
        )
        draws = profiles.describe_draws(self.current.seed, self.current.example_database)
        self.written = write_certificate(path, certificate, draws)

    def _backends(self) -> set[str]:
        return {c.name or f"W={c.world_size} skipped: {c.skip_reason}" for c in backend_choices(self.config)}

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.collector.outcomes and not self.written and not self.interrupted:
            return
        results, outcome = self._verdict()
        write = terminalreporter.write_line
        terminalreporter.section("sampler conformance")
        for result in results:
            if result.status != NOT_PROMISED:
                cases = f"  ({result.judged} cases)" if result.status in (HELD, NOT_JUDGED) and result.judged else ""
                write(f"{result.status:>14}  {result.flag:31s} {result.title}{cases}")
            if result.status == FAILED:
                for record in result.counterexamples[:MAX_SHOWN_COUNTEREXAMPLES]:
                    write(" " * 16 + f"[{record['title']}] {record['message'].splitlines()[0]}")
                    write(" " * 18 + f"{record['case'] or ''} ({record['test']})")
                hidden = len(result.counterexamples) - MAX_SHOWN_COUNTEREXAMPLES
                if hidden > 0:
                    write(" " * 16 + f"... {hidden} more counterexamples in the failures above")
        not_promised = [r.flag for r in results if r.status == NOT_PROMISED and r.tests]
        if not_promised:
            write(f"not promised by contract {self.current.contract.name!r}: {', '.join(not_promised)}")
        for line in _detail_lines(results):
            write(line)
        adapter_note = _adapter_note(self.current, results)
        if adapter_note:
            write(adapter_note)
        for finding in self.collector.findings:
            write(f"finding: {finding}")
        if self.written:
            write(f"certificate: {self.written[0]} and {self.written[1]}")
        write(
            outcome.line,
            green=outcome.conforms,
            red=outcome.state != PARTIAL and not outcome.conforms,
            yellow=outcome.state == PARTIAL,
            bold=True,
        )


# ---- fixtures -------------------------------------------------------------------------


@pytest.fixture(scope="session")
def plug(pytestconfig: pytest.Config) -> Plug:
    """What is under test, loaded by its subject (the index sampler's tests ask for ``sampler_plug``)."""
    return state(pytestconfig).plug


@pytest.fixture(scope="session")
def contract(pytestconfig: pytest.Config) -> Contract:
    return state(pytestconfig).contract


@pytest.fixture(scope="session")
def report_finding(pytestconfig: pytest.Config) -> Callable[[str, str], None]:
    """``report_finding(nodeid, text)``: a diagnostic for the run's summary, not a failure."""
    by_test = state(pytestconfig).findings_by_test

    def add(nodeid: str, text: str) -> None:
        findings = by_test.setdefault(nodeid, [])
        if text not in findings:
            findings.append(text)

    return add


def promise(contract: Contract, flag: str) -> None:
    """Skip the calling test when ``contract`` does not promise ``flag``."""
    if flag in contract.turned_off:
        pytest.skip(f"{flag} turned off with --without")
    if not contract.promises(flag):
        pytest.skip(f"contract {contract.name!r} does not promise {flag}")


__all__ = ["not_applicable", "profiles", "promise", "state"]
