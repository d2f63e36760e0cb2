"""The cost probe's place in a run: measured once, by the process that reports (the
pytest-xdist controller), at the session's start, before any test draws and while the
machine is quiet, and handed to the workers, whose test of ``+scalable`` judges it and
whose draws are planned from it (``core/size_plan.py``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sampler_conformance.core import size_plan
from sampler_conformance.core.cost import Cost
from sampler_conformance.execution.cost import CLEAR_REFS, Probed, sweeps
from sampler_conformance.subjects import subject_of
from sampler_conformance.subjects.specs import forgot_a_package

from .state import ConformanceState, state

WORKER_INPUT = "sampler_conformance_cost"  # the measurement, as JSON, in each worker's workerinput


def why_not_measured(config: pytest.Config, current: ConformanceState) -> str:
    """Why this run does not measure the cost (empty: it does)."""
    subject = subject_of(current.contract)
    if current.options["cost"] == "skip":
        return "--cost=skip"
    if config.option.collectonly:
        return "--collect-only"
    if subject.cost_probe is None:
        return f"the cost of a {subject.name.replace('_', ' ')} is not measured yet"
    if current.plug.needs_process_group:
        return "the sampler takes its rank from a process group, which the probe does not start"
    if not CLEAR_REFS.exists():
        return f"the probe resets a process's peak memory through {CLEAR_REFS}, which this system lacks (Linux has it)"
    return ""


class CostProbe:
    """Registered in the process that reports: measures at the session's start."""

    def __init__(self, current: ConformanceState) -> None:
        self.current = current

    @pytest.hookimpl(tryfirst=True)  # before pytest-xdist starts its workers
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        current = self.current
        current.cost_not_measured = why_not_measured(session.config, current)
        if not current.cost_not_measured:
            subject = subject_of(current.contract)
            assert subject.cost_probe is not None  # why_not_measured says so
            probed = Probed(
                current.plug.spec, current.contract, subject.load, subject.cost_probe, subject.noun, forgot_a_package()
            )
            current.cost = Cost(**sweeps(probed, subject.drawn))
        plan_draws(current)

    @pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: each worker gets the measurement
    def pytest_configure_node(self, node: Any) -> None:
        cost = self.current.cost
        node.workerinput[WORKER_INPUT] = json.dumps(
            {"cost": cost.to_json() if cost is not None else None, "not_measured": self.current.cost_not_measured}
        )


def take_from_controller(config: pytest.Config) -> None:
    """In a pytest-xdist worker: the measurement the controller made."""
    given = getattr(config, "workerinput", {}).get(WORKER_INPUT)
    if given is None:
        return
    data = json.loads(given)
    current = state(config)
    current.cost = Cost.from_json(data["cost"]) if data["cost"] is not None else None
    current.cost_not_measured = data["not_measured"]
    plan_draws(current)


def plan_draws(current: ConformanceState) -> None:
    """This process's draws, planned from the cost measured (none where it was not)."""
    size_plan.use(size_plan.SizePlan.of(current.cost, current.options["case_budget"]))
