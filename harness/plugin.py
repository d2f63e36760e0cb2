"""The pytest plugin (``-p sampler_conformance.plugin``): its hooks and generic fixtures.

At configure it reads the options (``pytest_plugin/options.py``), loads the spec through the
contract's subject and registers that subject's fixtures, keeps the run's state on the config
(``pytest_plugin/state.py``), and registers the conformance summary (``report/summary.py``).
Each certification test's report carries what it judged (``report/properties.py``).
"""

from __future__ import annotations

import gc
import json
import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hypothesis
import pytest
from hypothesis.errors import Unsatisfiable

from .core.contracts import Contract
from .core.evidence import (
    NotApplicable,
    NotPromised,
    charge_only,
    not_applicable,
    note_judged_with,
    speak_of,
)
from .core.subject import Plug, SpecError, sharded_spec
from .execution import hash_seeds, memory_budget, simulator
from .execution.backend import BackendChoice, choose_backend, cuda_device_count
from .execution.fork_server import running_fork_servers, stop_fork_servers
from .execution.rank_pool import start_fork_servers_for
from .execution.scenario import handle_faults_with
from .pytest_plugin import cost, crashes, profiles, statistics
from .pytest_plugin import ranks as ranks_plugin
from .pytest_plugin.folders import CERTIFICATION_DIRS
from .pytest_plugin.options import EVERY_CONTRACT, OPTIONS, add_options, mesh_layouts, option_named, setting
from .pytest_plugin.outcomes import expected_as_declared, shown_once
from .pytest_plugin.ranks import (
    group_sizes,
    left_out,
    mesh_of,
    probe,
    runs_in_groups,
    runs_in_process,
    variant_settings,
)
from .pytest_plugin.state import STATE_KEY, ConformanceState, Deselected, state
from .report.progress import Progress, WorkerCollection
from .report.properties import failure_properties, violation_properties
from .report.results import (
    EVERY_CASE_SET_ASIDE,
    EXAMPLES_KEY,
    FINDING_KEY,
    HARNESS_ERROR_KEY,
    IN_GROUPS_KEY,
    INVARIANT_KEY,
    JUDGED_KEY,
    MEASUREMENTS_KEY,
    MESH_KEY,
    NOT_APPLICABLE,
    NOT_JUDGED,
    NOT_PROMISED,
    NOT_RUN,
    SET_ASIDE_BY_KEY,
    SET_ASIDE_KEY,
    SIZES_KEY,
    SKIP_KIND_KEY,
    STATISTICS_KEY,
    TOO_FEW_ITEMS_KEY,
    VIOLATION_KEY,
    set_aside_reasons,
)
from .report.summary import ConformanceReport
from .subjects import REGISTRY, SUBJECTS, contract_named, describe_contracts, subject_of, subject_tested
from .subjects.specs import forget_checked_packages

CERTIFICATION_MARK = "certification"
SCALE_MARK = "scale"  # a test of the numeric edges: deselected unless --scale


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_cmdline_main(config: pytest.Config) -> int | None:
    listed = config.getoption("list_contracts")
    if listed is None:
        return None
    try:
        print(describe_contracts(None if listed == EVERY_CONTRACT else listed), end="")
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    return 0


# The fork servers the process ran before the run: a run inside another program's process
# (pytest's inline runs, the API) leaves them to it.
_SERVERS_BEFORE = pytest.StashKey[frozenset[int]]()


@pytest.hookimpl(trylast=True)  # after Hypothesis's plugin has loaded --hypothesis-profile
def pytest_configure(config: pytest.Config) -> None:
    config.stash[_SERVERS_BEFORE] = running_fork_servers()
    config.addinivalue_line("markers", f"{CERTIFICATION_MARK}: a test that certifies the sampler under test")
    config.addinivalue_line("markers", "invariant(flag): the contract invariant a certification test checks")
    config.addinivalue_line("markers", f"{SCALE_MARK}: a test of the numeric edges, run under --scale")
    options = {option.dest: setting(config, option) for option in OPTIONS}
    options["meshes"] = mesh_layouts(options["meshes"], options["data_dims"])
    try:
        contract = contract_named(options["contract"]).without(options["without"])
    except ValueError as exc:
        raise pytest.UsageError(f"--without={','.join(sorted(options['without']))}: {exc}") from None
    try:
        contract = contract.expecting(options["expect_failure"])
    except ValueError as exc:
        raise pytest.UsageError(f"--expect-failure: {exc}") from None
    subject = subject_of(contract)
    spec = options["sampler"] or contract.reference or subject.default_spec
    if options["shard_with"]:
        if options["shard_with"] not in subject.wrappers:
            raise pytest.UsageError(
                f"--shard-with={options['shard_with']}: contract {contract.name!r} is of {subject.name}, whose "
                f"things it does not wrap; it wraps those of "
                + ", ".join(s.name for s in SUBJECTS.values() if options["shard_with"] in s.wrappers)
            )
        spec = sharded_spec(spec, options["shard_with"])
    forget_checked_packages()  # this process collects the tests and builds no sampler
    try:
        plug = subject.load(spec)
        if subject.check_fit is not None:
            subject.check_fit(plug, contract)
    except SpecError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.pluginmanager.import_plugin(subject.fixtures)  # the fixtures its tests use
    config.pluginmanager.register(ranks_plugin, ranks_plugin.__name__)  # the ranks parameter, the group pools
    simulator.configure(timeout_s=options["rank_timeout"])
    memory_budget.configure(options["memory_budget"])
    # A sampler's fault inside a Hypothesis test that judges another invariant is set aside.
    handle_faults_with(crashes.set_aside_or_raise)
    # A case counts as judged only if it could have failed the invariant (an empty epoch cannot).
    note_judged_with(crashes.note_judged)
    # A violation of an invariant turned off with --without fails no test (the rest are judged).
    charge_only(lambda flag: flag not in contract.turned_off)
    speak_of(subject.fault_title, subject.yields)
    profiles.use_group_world_sizes(len(options["world_sizes"]))
    current = ConformanceState(plug=plug, contract=contract, options=options, selection=_selection(config))
    current.seed = profiles.fixed_seed(config.getoption("hypothesis_seed", None))
    hash_seeds.seed_hashes(current.seed)  # before any rank process or fork server starts
    if current.seed is None:
        current.example_database = profiles.search_database(config.invocation_params.dir, plug.spec)
    config.stash[STATE_KEY] = current
    if not hasattr(config, "workerinput"):  # pytest-xdist workers leave reporting to the controller
        report = ConformanceReport(
            current,
            floor=profiles.judged_floor(),
            draws=profiles.describe_draws(current.seed, current.example_database),
            backends=lambda: {c.name or f"W={c.world_size} skipped: {c.skip_reason}" for c in backend_choices(config)},
        )
        config.pluginmanager.register(report, "conformance-report")
        config.pluginmanager.register(Progress(report.collector, _invariant), "conformance-progress")
        config.pluginmanager.register(cost.CostProbe(current), "conformance-cost")
    else:  # the controller collects nothing: a worker tells it what it collected
        config.pluginmanager.register(WorkerCollection(_invariant), "conformance-worker-collection")
        cost.take_from_controller(config)


def _selection(config: pytest.Config) -> str:
    """How the command line chose tests, in words (``-k 'covers'``, ``test_x.py::test_y``), or
    empty where it runs them all."""
    chosen = [f"-k {config.option.keyword!r}"] if config.option.keyword else []
    chosen += [f"-m {config.option.markexpr!r}"] if config.option.markexpr else []
    chosen += [Path(arg).name for arg in config.args if "::" in arg]
    return ", ".join(chosen)


def pytest_unconfigure(config: pytest.Config) -> None:
    simulator.close()  # the in-process runner's sampler process
    # The ranks' and the sampler process's parents: nothing the run started outlives it.
    stop_fork_servers(keep=config.stash.get(_SERVERS_BEFORE, frozenset()))


def pytest_report_header(config: pytest.Config) -> list[str]:
    import torch
    from hypothesis import settings

    current = state(config)
    plug = current.plug
    missing = ", ".join(current.contract.missing(plug.missing)) or "none"
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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    flags = {item: _invariant(item) for item in items}
    for item, flag in flags.items():
        if flag is not None and flag not in REGISTRY:
            raise pytest.UsageError(
                f"{item.nodeid} checks invariant {flag!r}, which the registry (sampler_conformance.core.invariants) does not "
                f"declare; declare it there (title, bug class, known-bad sampler) first"
            )
    current = state(config)
    seed = current.seed
    # A run certifies what its contract promises of one subject, on the ranks --ranks chose:
    # the other tests are left out, as deselected, and the summary says so once, in words.
    contract = current.contract
    tested = {item: subject_tested(flags[item], getattr(item, "fixturenames", ())) for item in items}
    others = [
        item
        for item in items
        if tested[item] not in (None, contract.subject)
        or left_out(item)
        or contract.rules_out(_params(item))
        or (item.get_closest_marker(SCALE_MARK) is not None and not current.options["scale"])
    ]
    unpromised = [
        item for item in items if item not in others and (flag := flags[item]) and not contract.promises(flag)
    ]
    current.deselected = Deselected(others=len(others), unpromised=len(unpromised))
    if others or unpromised:
        config.hook.pytest_deselected(items=others + unpromised)
        dropped = set(others + unpromised)
        items[:] = [item for item in items if item not in dropped]
    for item in items:
        path = Path(item.path).resolve()
        if any(path.is_relative_to(folder) for folder in CERTIFICATION_DIRS):
            item.add_marker(CERTIFICATION_MARK)
            function = _hypothesis_test(item)
            if seed is not None and function is not None:
                hypothesis.seed(seed)(function)  # the same draws on every run, and no example database


def pytest_collection_finish(session: pytest.Session) -> None:
    """Real groups will run (-k and the subject's selection already applied): their ranks'
    fork servers start now, importing torch while the in-process tests run (under torchrun,
    its agents start the ranks)."""
    from .execution.torchrun.pool import started_pools

    if any(runs_in_groups(item) for item in session.items) and started_pools(session.config) is None:
        start_fork_servers_for(group_sizes(session.config))
    # What the run has built so far (torch, Hypothesis, the suite, the collected tests) lives
    # as long as the run: moved out of the garbage collector's way, its full passes no longer
    # walk it again and again (docs/speed.md).
    gc.freeze()


def _hypothesis_test(item: pytest.Item) -> Callable[..., Any] | None:
    """The item's test function if Hypothesis draws its cases (``@given``), else None."""
    function = getattr(item, "obj", None)
    return function if function is not None and hasattr(function, "hypothesis") else None


def _params(item: pytest.Item) -> dict[str, object]:
    """The item's parameters, by name (none for a test without parametrization)."""
    callspec = getattr(item, "callspec", None)
    return dict(callspec.params) if callspec is not None else {}


def _invariant(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("invariant")
    return marker.args[0] if marker is not None else None


def pytest_runtest_setup(item: pytest.Item) -> None:
    flag = _invariant(item)
    crashes.begin_test(flag, subject_of(state(item.config).contract).crash_flag)
    statistics.begin_test()
    function = _hypothesis_test(item)
    if function is not None:
        _use_variant_settings(item, function, without_shrinking=flag in state(item.config).failed_flags)
        crashes.count_examples(function)
        variant = function._hypothesis_internal_use_settings  # type: ignore[attr-defined]  # set above
        crashes.draw_on_for(min(variant.max_examples, profiles.judged_floor()))
    if flag is not None:
        current = state(item.config)
        in_process = runs_in_process(item)
        if in_process and current.plug.needs_process_group:
            not_applicable(
                "it is declared needs_process_group (it takes its rank from the process group, or acts otherwise "
                "inside one): only real groups (the W variants) judge it"
            )
        if not current.plug.needs_process_group:  # one that does is probed in its group
            probe(item.config, simulator.SIMULATED)
    simulator.begin_test()  # after the probe: a case it hung on does not stop this test


# The item whose Hypothesis settings _use_variant_settings changed: its test function's own, restored at teardown.
_SETTINGS_BEFORE = pytest.StashKey[hypothesis.settings]()


# Why the item's failures are shown as drawn, not shrunk; absent where they are shrunk.
_AS_DRAWN = pytest.StashKey[str]()
# A set-aside fault is the smallest case of its kind that a test drew, never shrunk: shrinking
# it would hold up the test of another invariant.
SET_ASIDE_AS_DRAWN = "set aside by a test of another invariant, which does not shrink what it sets aside"


def _use_variant_settings(item: pytest.Item, function: Callable[..., Any], *, without_shrinking: bool) -> None:
    """The settings of this variant of the test (``ranks.variant_settings``: fewer examples in
    real groups). ``without_shrinking``: it draws as usual but reports its first failing
    example as it is, since its invariant failed already, with a shrunk counterexample. The
    function is shared by the parametrized variants of a test, so its settings come back at
    teardown."""
    before = function._hypothesis_internal_use_settings  # type: ignore[attr-defined]  # set by @given
    item.stash[_SETTINGS_BEFORE] = before
    settings = variant_settings(item, before)
    if without_shrinking:
        phases = [phase for phase in settings.phases if phase is not hypothesis.Phase.shrink]
        settings = hypothesis.settings(settings, phases=phases)
        item.stash[_AS_DRAWN] = "its invariant had failed already, shrunk, in an earlier test"
    elif hypothesis.Phase.shrink not in settings.phases:
        item.stash[_AS_DRAWN] = (
            f"the Hypothesis profile {hypothesis.settings.get_current_profile_name()!r} does not shrink"
        )
    function._hypothesis_internal_use_settings = settings  # type: ignore[attr-defined]


def pytest_runtest_teardown(item: pytest.Item) -> None:
    before = item.stash.get(_SETTINGS_BEFORE, None)
    function = _hypothesis_test(item)
    if before is not None and function is not None:
        function._hypothesis_internal_use_settings = before  # type: ignore[attr-defined]  # set by @given


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    # Before pytest's own hooks turn it into a plain skip: raised by a test or a fixture (``not_applicable``).
    inapplicable = call.excinfo is not None and call.excinfo.errisinstance(NotApplicable)
    unpromised = call.excinfo is not None and call.excinfo.errisinstance(NotPromised)
    report = yield
    flag = _invariant(item)
    if flag is None:
        return report
    # Carried on the report, so it reaches the pytest-xdist controller and --junitxml too.
    properties: list[tuple[str, object]] = [(INVARIANT_KEY, flag)]
    layout = mesh_of(item)
    if layout is not None:
        properties.append((MESH_KEY, layout.id))
    if runs_in_groups(item):
        properties.append((IN_GROUPS_KEY, True))
    if report.when == "call":
        examples = crashes.examples() or 1  # a test without Hypothesis runs its one case
        properties.append((EXAMPLES_KEY, examples))
        current = state(item.config)
        properties += [(FINDING_KEY, f) for f in current.findings_by_test.pop(item.nodeid, [])]
        properties += [(FINDING_KEY, f) for f in current.pending_findings]
        current.pending_findings.clear()
        subject = subject_of(current.contract)
        set_aside = crashes.take_set_aside()
        set_aside_by = crashes.set_aside_by_flag(set_aside, subject.crash_flag)
        for fault, cases in crashes.smallest_of_each_kind(set_aside):  # each kind of fault, its smallest case
            properties += violation_properties([fault], subject, cases=cases, as_drawn=SET_ASIDE_AS_DRAWN)
        properties.append((SET_ASIDE_KEY, len(set_aside)))
        properties.append((SET_ASIDE_BY_KEY, json.dumps(set_aside_by)))
        if _hypothesis_test(item):
            judged, too_few_items = crashes.judged(), crashes.too_few_items()
        else:  # a test without Hypothesis judges its one fixed case, if it passes on enough items
            judged = crashes.judged_fixed_case(report.passed)
            too_few_items = int(report.passed) - judged
        properties += [(JUDGED_KEY, judged), (TOO_FEW_ITEMS_KEY, too_few_items)]
        if judged:
            properties.append((SIZES_KEY, json.dumps(crashes.judged_sizes())))
        tested = statistics.summary()
        if tested is not None:
            properties.append((STATISTICS_KEY, json.dumps(tested)))
        measured = statistics.measured()
        if measured is not None:
            properties.append((MEASUREMENTS_KEY, json.dumps(measured)))
        if (
            set_aside
            and call.excinfo is not None
            and call.excinfo.errisinstance((Unsatisfiable, crashes.EnoughSetAside))
        ):
            if call.excinfo.errisinstance(crashes.EnoughSetAside) and crashes.ran_to_the_end():
                # stopped early, having judged the cases that were not set aside (the floor counts those that could fail)
                report.outcome, report.longrepr = "passed", None
            else:  # every example was set aside, so nothing was judged: not a failure of this invariant
                report.outcome = "skipped"
                reasons = ", ".join(set_aside_reasons(set_aside_by, subject))
                report.longrepr = (str(item.path), 0, f"{EVERY_CASE_SET_ASIDE}: {reasons}")
                properties.append((SKIP_KIND_KEY, NOT_JUDGED))
    if call.excinfo is not None and report.failed:
        failed = failure_properties(
            call.excinfo.value, subject_of(state(item.config).contract), item.stash.get(_AS_DRAWN, None)
        )
        properties += failed
        # Its own failures, not those set aside: a flag failed only as drawn still has its tests shrink.
        records = [json.loads(str(value)) for key, value in failed if key == VIOLATION_KEY]
        failed_flags = {record["flag"] for record in records}
        state(item.config).failed_flags.update(failed_flags)
        shown_once(report, item.nodeid, records, state(item.config).shown_failures)
        expected_as_declared(report, state(item.config).contract, failed_flags)
    if report.skipped and not any(key == SKIP_KIND_KEY for key, _ in properties):
        properties.append((SKIP_KIND_KEY, NOT_APPLICABLE if inapplicable else NOT_PROMISED if unpromised else NOT_RUN))
    report.user_properties = [*report.user_properties, *properties]
    return report


def pytest_report_teststatus(
    report: pytest.TestReport, config: pytest.Config
) -> tuple[str, str, str | tuple[str, dict[str, bool]]] | None:
    """A harness error reads as a pytest error (E), not as a failure of the sampler. A failed
    test names the invariants its failure is charged to, ``FAILED [pads_from_head] test_order.py::
    test_set_epoch_reshuffles[...]``: the short summary's FAILED lines are grouped by the
    broken invariant, and a test whose own invariant held but that found another's violation
    does not read as a failure of its own."""
    properties = getattr(report, "user_properties", [])
    if (
        report.failed
        and any(k == HARNESS_ERROR_KEY for k, _ in properties)
        and not any(k == VIOLATION_KEY for k, _ in properties)
    ):
        return "error", "E", "ERROR"
    records = [json.loads(str(value)) for key, value in properties if key == VIOLATION_KEY]
    charged = sorted({r["flag"] for r in records if r.get("as_drawn") != SET_ASIDE_AS_DRAWN})
    if report.failed and report.when == "call" and charged:
        return "failed", "F", (f"FAILED [{', '.join(charged)}]", {"red": True})
    return None


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


__all__ = ["not_applicable", "profiles", "state"]
