"""Progress on long runs: a line as each invariant is settled, with an estimate of the time left.

An invariant is settled when the last of its collected certification tests has reported;
its status is then the one ``results.py`` gives it from the reports so far (the table at
the end may still differ where a later test charges a violation to it, or, for the crash
flag, judges more cases). An invariant of device meshes, judged by every test's mesh
variants, is settled with the run's last test.

``pads_from_head: failed  [7 of 18 invariants settled, 12.3 s; about 9 s left]``

Under pytest-xdist the controller collects nothing: each worker sends its collection's
counts with its first report (``WorkerCollection``).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from sampler_conformance.core.invariants import REGISTRY, Where

from .results import ERROR, FAILED, INVARIANT_KEY, ResultCollector

InvariantOf = Callable[[pytest.Item], "str | None"]

# A report attribute (it crosses pytest-xdist with the report): the tests a worker collected, by invariant.
COLLECTED_ATTRIBUTE = "conformance_tests_by_invariant"
# The estimate of the time left: the time per test since the first was done (before it, the
# run starts up: fork servers, pytest-xdist's workers), once a tenth of the tests are;
# nothing under a second.
ESTIMATE_AFTER = 0.1


def tests_by_invariant(items: Iterable[pytest.Item], invariant_of: InvariantOf) -> dict[str, int]:
    return dict(Counter(flag for flag in map(invariant_of, items) if flag is not None))


class WorkerCollection:
    """In a pytest-xdist worker: puts what it collected on its first report, for the controller's ``Progress``."""

    def __init__(self, invariant_of: InvariantOf) -> None:
        self.invariant_of = invariant_of
        self.collected: dict[str, int] | None = None

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.collected = tests_by_invariant(session.items, self.invariant_of)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        report = yield
        if self.collected is not None:
            setattr(report, COLLECTED_ATTRIBUTE, self.collected)
            self.collected = None
        return report


class Progress:
    """Writes a line as each invariant is settled, with the time since the tests
    began and, once it means something, an estimate of the time left."""

    def __init__(self, collector: ResultCollector, invariant_of: InvariantOf) -> None:
        self.collector = collector  # the summary's: it has the report already when this hook runs
        self.invariant_of = invariant_of
        self.expected: dict[str, int] | None = None  # tests per invariant
        self.tests = 0  # every certification test collected
        self.done: Counter[str] = Counter()
        self.settled: list[str] = []
        self.started = time.monotonic()
        self.first_done: float | None = None  # when the first test was done: the rate is measured from there
        self.terminal: Any = None
        self.verbosity = 0

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.terminal = session.config.pluginmanager.get_plugin("terminalreporter")
        self.verbosity = session.config.get_verbosity()

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._expect(tests_by_invariant(session.items, self.invariant_of))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        self.started = time.monotonic()

    @pytest.hookimpl(trylast=True)  # after ConformanceReport has added the report to the collector
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.expected is None and hasattr(report, COLLECTED_ATTRIBUTE):
            self._expect(getattr(report, COLLECTED_ATTRIBUTE))
        flag = dict(report.user_properties).get(INVARIANT_KEY)
        if self.expected is None or not isinstance(flag, str) or report.when != "teardown":
            return
        self.done[flag] += 1
        if self.first_done is None:
            self.first_done = time.monotonic()
        newly = [f for f in self.expected if f not in self.settled and self._all_reported(f)]
        if newly:
            statuses = {result.flag: result.status for result in self.collector.results()}
            for settled in newly:
                self.settled.append(settled)
                self._write(settled, statuses[settled])

    def _expect(self, collected: dict[str, int]) -> None:
        """The tests of each invariant (those the contract does not promise are deselected); an
        invariant of meshes waits for every test."""
        self.tests = sum(collected.values())
        self.expected = dict(collected)
        contract = self.collector.contract
        if collected:
            self.expected |= {
                flag: self.tests
                for flag in self.collector.declared
                if REGISTRY[flag].where is Where.MESH and contract.promises(flag)
            }

    def _all_reported(self, flag: str) -> bool:
        assert self.expected is not None
        done = self.done.total() if REGISTRY[flag].where is Where.MESH else self.done[flag]
        return done == self.expected[flag]

    def _write(self, flag: str, status: str) -> None:
        failed = status in (FAILED, ERROR)
        if self.terminal is None or not self._shown(failed):
            return
        self.terminal.ensure_newline()
        # A row of pytest-xdist's dots (or of -q's), which the terminal reporter does not know is open.
        if self.terminal._tw.width_of_current_line:
            self.terminal.write("\n")
        self.terminal.write_line(f"{flag}: {status}  [{self._where_the_run_is()}]", red=failed)

    def _shown(self, failed: bool) -> bool:
        """Every line by default and with -v; under -q only those of failures (news worth
        stopping the run for); none under -qq."""
        return self.verbosity >= 0 or (self.verbosity == -1 and failed)

    def _where_the_run_is(self) -> str:
        """``7 of 18 invariants settled, 12.3 s; about 9 s left``."""
        assert self.expected is not None
        now = time.monotonic()
        line = f"{len(self.settled)} of {len(self.expected)} invariants settled, {_duration(now - self.started, 1)}"
        since_first = self.done.total() - 1  # tests done since the first
        if self.first_done is None or since_first < max(1, ESTIMATE_AFTER * self.tests):
            return line
        left = (now - self.first_done) / since_first * (self.tests - self.done.total())
        return f"{line}; about {_duration(left, 0)} left" if left >= 1 else line


def _duration(seconds: float, digits: int) -> str:
    """``12.3 s``, ``2 min 5 s``."""
    if seconds < 60:
        return f"{seconds:.{digits}f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"
