"""The pytest plugin: options, report header, fixtures and the conformance summary.

Every option is read with the same precedence: command line, then environment
variable, then ini file, then the default.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest

from . import profiles, runner
from .contracts import CONTRACTS, DEFAULT_CONTRACT, Contract
from .plug import DEFAULT_SPEC, SamplerPlug, SamplerSpecError, load_plug

CERTIFICATION_DIRS = ("properties", "conformance")
CERTIFICATION_MARK = "certification"
DIAGNOSTIC_KEY = "conformance_diagnostic"


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
        raise pytest.UsageError(f"--rank-timeout={text!r} is not a number; give seconds, e.g. --rank-timeout=60") from None
    if value <= 0:
        raise pytest.UsageError(f"--rank-timeout={text!r} must be positive; give seconds, e.g. --rank-timeout=60")
    return value


def _contract_name(text: str) -> str:
    if text not in CONTRACTS:
        raise pytest.UsageError(f"--contract={text!r} is not a known contract; choose one of: {', '.join(CONTRACTS)}")
    return text


OPTIONS = (
    Option(
        "sampler",
        "CONFORMANCE_SAMPLER",
        DEFAULT_SPEC,
        "sampler under test as MODULE:ATTR or path/to/file.py:ATTR, a class or factory called as "
        "Attr(dataset, num_replicas=W, rank=r, shuffle=, seed=, drop_last=) "
        f"(default {DEFAULT_SPEC})",
    ),
    Option(
        "contract",
        "CONFORMANCE_CONTRACT",
        DEFAULT_CONTRACT,
        f"contract the sampler promises, one of: {', '.join(CONTRACTS)} (default {DEFAULT_CONTRACT})",
        _contract_name,
    ),
    Option(
        "rank-timeout",
        "CONFORMANCE_RANK_TIMEOUT",
        str(runner.DEFAULT_TIMEOUT_S),
        "seconds one rank may spend on one case before it is reported as hung (default %(default)s)",
        _positive_seconds,
    ),
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sampler conformance")
    for option in OPTIONS:
        text = option.help.replace("%(default)s", option.default)
        group.addoption(f"--{option.name}", dest=option.dest, default=None, help=f"{text}; env {option.env}")
        parser.addini(option.dest, help=text, default=None)


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
    plug: SamplerPlug
    contract: Contract
    diagnostics: dict[str, list[str]] = field(default_factory=dict)  # nodeid -> findings
    outcomes: dict[str, list[str]] = field(default_factory=dict)  # property -> outcomes
    skip_reasons: dict[str, str] = field(default_factory=dict)
    findings: list[str] = field(default_factory=list)


_STATE_KEY = pytest.StashKey[ConformanceState]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{CERTIFICATION_MARK}: a test that certifies the sampler under test")
    options = {option.dest: setting(config, option) for option in OPTIONS}
    try:
        plug = load_plug(options["sampler"])
    except SamplerSpecError as exc:
        raise pytest.UsageError(str(exc)) from None
    runner.configure(timeout_s=options["rank_timeout"])
    current = ConformanceState(plug=plug, contract=CONTRACTS[options["contract"]])
    config.stash[_STATE_KEY] = current
    config.pluginmanager.register(ConformanceSummary(current), "conformance-summary")


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
        f"hypothesis profile: {settings.get_current_profile_name()}",
    ]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(config.rootpath)
    for item in items:
        relative = Path(item.path).resolve()
        if any(relative.is_relative_to(root / d) for d in CERTIFICATION_DIRS):
            item.add_marker(CERTIFICATION_MARK)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    # Findings travel on the report, so they reach the controller under pytest-xdist too.
    for finding in state(item.config).diagnostics.pop(item.nodeid, []) if report.when == "call" else []:
        report.user_properties.append((DIAGNOSTIC_KEY, finding))
    return report


class ConformanceSummary:
    """Collects each certification test's outcome and prints the verdict at the end."""

    def __init__(self, current: ConformanceState) -> None:
        self.current = current

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if CERTIFICATION_MARK not in report.keywords:
            return
        current = self.current
        for key, value in report.user_properties:
            if key == DIAGNOSTIC_KEY and value not in current.findings:
                current.findings.append(value)
        if report.when == "call" or report.outcome != "passed":
            name = report.nodeid.split("::", 1)[-1]
            current.outcomes.setdefault(name, []).append(report.outcome)
            if report.skipped and isinstance(report.longrepr, tuple):
                current.skip_reasons[name] = str(report.longrepr[2]).removeprefix("Skipped: ")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        current = self.current
        if not current.outcomes:
            return
        write = terminalreporter.write_line
        terminalreporter.section("sampler conformance")
        by_property: dict[str, set[str]] = {}
        for name, outcomes in current.outcomes.items():
            by_property.setdefault(property_name(name), set()).update(outcomes)
        failed = sorted(p for p, outcomes in by_property.items() if "failed" in outcomes)
        held = sorted(p for p, outcomes in by_property.items() if outcomes == {"passed"} or outcomes == {"passed", "skipped"})
        not_applicable = sorted(set(by_property) - set(failed) - set(held))
        for name, outcomes in current.outcomes.items():
            if "skipped" in outcomes:
                write(f"not applicable: {name}: {current.skip_reasons.get(name, 'skipped')}")
        for finding in current.findings:
            write(f"finding: {finding}")
        subject = f"{current.plug.spec} under contract {current.contract.name!r}"
        counts = f"{len(by_property)} properties: {len(held)} held, {len(failed)} failed, {len(not_applicable)} not applicable"
        if failed:
            write(f"VERDICT: {subject} does NOT conform ({counts}); failed: {', '.join(failed)}", red=True, bold=True)
        else:
            write(f"VERDICT: {subject} conforms ({counts})", green=True, bold=True)


def property_name(test_name: str) -> str:
    """``test_union_coverage[drop_last]`` -> ``test_union_coverage``."""
    return test_name.split("::")[-1].split("[")[0]


# ---- fixtures -------------------------------------------------------------------------


@pytest.fixture(scope="session")
def sampler_plug(pytestconfig: pytest.Config) -> SamplerPlug:
    return state(pytestconfig).plug


@pytest.fixture(scope="session")
def contract(pytestconfig: pytest.Config) -> Contract:
    return state(pytestconfig).contract


@pytest.fixture(scope="session", params=[False, True], ids=["keep_last", "drop_last"])
def drop_last(request: pytest.FixtureRequest, sampler_plug: SamplerPlug) -> bool:
    if request.param and not sampler_plug.supports("drop_last"):
        pytest.skip(sampler_plug.missing_reason("drop_last"))
    return request.param


@pytest.fixture(scope="session")
def report_finding(pytestconfig: pytest.Config) -> Callable[[str, str], None]:
    """``report_finding(nodeid, text)``: a diagnostic for the run's summary, not a failure."""
    diagnostics = state(pytestconfig).diagnostics

    def add(nodeid: str, text: str) -> None:
        findings = diagnostics.setdefault(nodeid, [])
        if text not in findings:
            findings.append(text)

    return add


def promise(contract: Contract, flag: str) -> None:
    """Skip the calling test when ``contract`` does not promise ``flag``."""
    if not contract.promises(flag):
        pytest.skip(f"contract {contract.name!r} does not promise {flag}")


def requires_parameter(plug: SamplerPlug, parameter: str) -> None:
    if not plug.supports(parameter):
        pytest.skip(plug.missing_reason(parameter))


__all__ = ["profiles", "promise", "requires_parameter", "state"]
