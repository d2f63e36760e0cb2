"""What the plugin knows of the run, per pytest config: the plug, the contract, the options,
the draws' seed and the findings waiting to be reported. Stashed on the config, so that
several pytest sessions in one process (pytester) keep theirs apart."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from sampler_conformance.core.contracts import Contract
from sampler_conformance.core.cost import Cost
from sampler_conformance.core.subject import Plug

from . import profiles


@dataclass(frozen=True)
class Deselected:
    """The tests a run left out at collection, which pytest counts as deselected: those of
    other subjects, of ranks ``--ranks`` rules out or of variants the contract does
    (``Contract.rules_out``), and those of invariants it does not promise (or turned off with
    ``--without``)."""

    others: int
    unpromised: int


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
    # The invariants a test of this process has failed, with its counterexample shrunk: their
    # later tests (the same check in real groups, at every world size) stop at their first
    # failing example instead of shrinking it again, a group round trip per step.
    failed_flags: set[str] = field(default_factory=set)
    # What collection left out; None where this process collected nothing (the pytest-xdist controller).
    deselected: Deselected | None = None
    # How the user chose the tests to run (-k EXPR, -m EXPR, test ids), in words; empty: all of them.
    selection: str = ""
    # Each kind of failure a test of this process showed in full (evidence.failure_kind), and that test.
    shown_failures: dict[str, str] = field(default_factory=dict)
    # One rank's cost as N grows (harness.execution.cost), measured at the session's start; None
    # where it was not, and why (pytest_plugin.cost).
    cost: Cost | None = None
    cost_not_measured: str = ""


STATE_KEY = pytest.StashKey[ConformanceState]()


def state(config: pytest.Config) -> ConformanceState:
    return config.stash[STATE_KEY]
