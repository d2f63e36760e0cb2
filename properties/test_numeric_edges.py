"""The per-epoch invariants that hold of each rank, judged at the numeric edges (``--scale``).

Each test reads the edge size's cases (shuffled or not, padded or truncated) on a few of
16,384 ranks, as ``harness.subjects.index_sampler.edges`` chooses them, where the cost
measured before the draws affords it, and judges its invariant on that partial reading
with the invariant's own judge: the same invariant as at N <= 10,000, on a partial reading.
"""

from __future__ import annotations

import pytest

from sampler_conformance.core.evidence import expect_holds
from sampler_conformance.execution.simulator import SIMULATED
from sampler_conformance.pytest_plugin.options import option_named, setting
from sampler_conformance.pytest_plugin.state import state
from sampler_conformance.subjects.index_sampler.checks import PER_EPOCH, judge
from sampler_conformance.subjects.index_sampler.edges import edge_cases, edge_sizes, ranks_read, unaffordable
from sampler_conformance.subjects.index_sampler.scenarios.epochs import read_epochs

PARTIAL = [judged.flag for judged in PER_EPOCH if judged.partial]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every partially judged invariant at every edge size, and at --production-size when given."""
    if "edge" not in metafunc.fixturenames:
        return
    sizes = edge_sizes(setting(metafunc.config, option_named("production-size")))
    metafunc.parametrize(
        ("flag", "edge"),
        [
            pytest.param(flag, size, marks=pytest.mark.invariant(flag), id=f"{flag}-N{size}")
            for flag in PARTIAL
            for size in sizes
        ],
    )


@pytest.mark.scale
def test_at_the_numeric_edge(sampler_plug, contract, flag, edge, request):
    current = state(request.config)
    judged, reasons = 0, []
    for case in edge_cases(edge):
        case = case.within(contract)
        if not PER_EPOCH[flag].applies(case):
            continue
        why = unaffordable(current.cost, case, current.cost_not_measured)
        if why:
            reasons.append(why)
            continue
        only = ranks_read(case)
        (observation,) = read_epochs(SIMULATED, sampler_plug, contract, case, (case.epoch,), only_ranks=only).explicit
        expect_holds(observation, judge(flag, observation, contract))
        judged += 1
    if not judged:
        pytest.skip(reasons[0] if reasons else f"no case at N={edge} is one {flag} speaks about")
