"""The invariants judged at the numeric edges (``--scale``), each by its own check.

An index sampler: the edge size's cases (shuffled or not, padded or truncated) on a few of
16,384 ranks, as ``harness.subjects.index_sampler.edges`` chooses them, judged by the
per-epoch invariants that hold of each rank: the same invariants as at N <= 10,000, on a
partial reading, and the order across two readings of the same ranks. A weighted sampler: 2^24 + 1 weights, half the weight past 2^24, on two
ranks read whole (``harness.subjects.weighted_sampler.edges``). Each case is read only where
the cost measured before the draws affords it. A token-budget batch sampler: a budget past
uint32 over items past int32 together (``harness.subjects.batch_sampler.edges``), every rank
read whole. A stream: 2^24 + 1 ids on two ranks, read whole
(``harness.subjects.iterable_dataset.edges``).
"""

from __future__ import annotations

import pytest
from hypothesis import settings

from sampler_conformance.core.comparing import check_same_indices
from sampler_conformance.core.evidence import expect_holds
from sampler_conformance.core.frequencies import FalseAlarmBudget
from sampler_conformance.execution.cost import unaffordable
from sampler_conformance.execution.simulator import SIMULATED
from sampler_conformance.pytest_plugin import statistics
from sampler_conformance.pytest_plugin.options import option_named, setting
from sampler_conformance.pytest_plugin.state import state
from sampler_conformance.subjects.batch_sampler.checks import ONE_EPOCH
from sampler_conformance.subjects.batch_sampler.edges import edge_case as batch_edge_case
from sampler_conformance.subjects.batch_sampler.scenarios import read_epochs as read_batches
from sampler_conformance.subjects.index_sampler.checks import PER_EPOCH, judge
from sampler_conformance.subjects.index_sampler.edges import edge_cases, edge_sizes, ranks_read
from sampler_conformance.subjects.index_sampler.order_checks import check_orders_differ, missing_set_epoch
from sampler_conformance.subjects.index_sampler.scenarios.epochs import read_epochs
from sampler_conformance.subjects.iterable_dataset.checks import ONE_EPOCH as STREAM_ONE_EPOCH
from sampler_conformance.subjects.iterable_dataset.edges import EDGE_SIZES as STREAM_EDGE_SIZES
from sampler_conformance.subjects.iterable_dataset.edges import edge_case as stream_edge_case
from sampler_conformance.subjects.iterable_dataset.scenarios import read_epochs as read_stream
from sampler_conformance.subjects.weighted_sampler.checks import check_frequencies
from sampler_conformance.subjects.weighted_sampler.draws import FREQUENCY_DRAWS
from sampler_conformance.subjects.weighted_sampler.edges import EDGE_SIZES as WEIGHTED_EDGE_SIZES
from sampler_conformance.subjects.weighted_sampler.edges import EDGE_WORLD as WEIGHTED_EDGE_WORLD
from sampler_conformance.subjects.weighted_sampler.edges import JUDGED as WEIGHTED_AT_EDGE
from sampler_conformance.subjects.weighted_sampler.edges import edge_case as weighted_edge_case
from sampler_conformance.subjects.weighted_sampler.scenarios import read_epochs as read_draws

PARTIAL = [judged.flag for judged in PER_EPOCH if judged.partial]
# The order across readings, on the ranks read: fresh samplers give the same order for the same
# (seed, epoch); set_epoch to the next epoch gives another.
ORDER_AT_EDGE = ["deterministic", "reshuffles_on_set_epoch"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every invariant judged at the edges at every edge size, and at --production-size when given."""
    flags = {test_at_the_numeric_edge: PARTIAL, test_order_at_the_numeric_edge: ORDER_AT_EDGE}.get(metafunc.function)
    if flags is None:
        return
    sizes = edge_sizes(setting(metafunc.config, option_named("production-size")))
    metafunc.parametrize(
        ("flag", "edge"),
        [
            pytest.param(flag, size, marks=pytest.mark.invariant(flag), id=f"{flag}-N{size}")
            for flag in flags
            for size in sizes
        ],
    )


@pytest.mark.scale
def test_at_the_numeric_edge(sampler_plug, contract, flag, edge, request):
    judged, reasons = 0, []
    for case in edge_cases(edge, sampler_plug):
        case = case.within(contract)
        if not PER_EPOCH[flag].applies(case):
            continue
        only = ranks_read(case)
        why = _unaffordable(request, case.dataset_size, case.world_size, len(only), _share(case))
        if why:
            reasons.append(why)
            continue
        (observation,) = read_epochs(SIMULATED, sampler_plug, contract, case, (case.epoch,), only_ranks=only).explicit
        expect_holds(observation, judge(flag, observation, contract))
        judged += 1
    if not judged:
        pytest.skip(reasons[0] if reasons else f"no case at N={edge} is one {flag} speaks about")


@pytest.mark.scale
def test_order_at_the_numeric_edge(sampler_plug, contract, flag, edge, request):
    """The edge's shuffled case, padded where the sampler pads, read twice on its first and last
    ranks: by fresh samplers at the same epoch (deterministic), or at the next epoch (reshuffles)."""
    case = edge_cases(edge, sampler_plug)[0].within(contract)  # shuffled, padded (when it takes drop_last)
    only = (0, case.world_size - 1)  # an order: the first rank's and the last's are enough to see it move
    why = _unaffordable(request, case.dataset_size, case.world_size, 2 * len(only), _share(case))
    if why:
        pytest.skip(why)
    epoch = case.epoch or 0
    if flag == "deterministic":
        first, again = (
            read_epochs(SIMULATED, sampler_plug, contract, case, (epoch,), only_ranks=only).explicit[0] for _ in "ab"
        )
        what = "fresh samplers with the same arguments gave another order"
        expect_holds(again, check_same_indices(first, again, flag, what))
        return
    readings = read_epochs(SIMULATED, sampler_plug, contract, case, (epoch, epoch + 1), only_ranks=only)
    first, second = readings.explicit
    if not readings.has_set_epoch:
        expect_holds(first, [missing_set_epoch(case)])
    what = f"set_epoch({epoch}) and set_epoch({epoch + 1}) must give different orders"
    expect_holds(second, check_orders_differ(first, second, flag, what))


def _unaffordable(request, size: int, world_size: int, reads: int, items_read: int) -> str:
    """Why the case is not read (empty: it is), under the run's measured cost and --read-budget."""
    current = state(request.config)
    return unaffordable(
        current.cost, size, world_size, reads, current.cost_not_measured, items_read, current.options["read_budget"]
    )


def _share(case) -> int:
    """The most items one rank of ``case`` reads: ceil(N / W)."""
    return -(-case.dataset_size // case.world_size)


@pytest.mark.scale
@pytest.mark.parametrize(
    ("flag", "edge"),
    [
        pytest.param(flag, size, marks=pytest.mark.invariant(flag), id=f"{flag}-N{size}")
        for flag in WEIGHTED_AT_EDGE  # each reads the case afresh where the sampler raised: seconds each
        for size in WEIGHTED_EDGE_SIZES
    ],
)
def test_weighted_at_the_numeric_edge(weighted_plug, contract, flag, edge, request):
    case = weighted_edge_case(edge, -(-FREQUENCY_DRAWS // WEIGHTED_EDGE_WORLD))
    why = _unaffordable(request, case.dataset_size, case.world_size, case.world_size, case.num_samples)
    if why:
        pytest.skip(why)
    drawn = read_draws(SIMULATED, weighted_plug, contract, case, [case.epoch])
    if flag == "frequencies_match_weights":  # one test more than the draws' tests share the budget among
        violations, verdict = check_frequencies(drawn, FalseAlarmBudget(tests=settings().max_examples).per_test)
        statistics.record(verdict)
    else:  # weighted_runs: the reading ran to the end
        violations = []
    expect_holds(drawn[0].observation, violations)


@pytest.mark.scale
@pytest.mark.parametrize("flag", [pytest.param(f, marks=pytest.mark.invariant(f), id=f) for f in ONE_EPOCH.flags])
def test_batches_at_the_numeric_edge(batch_plug, contract, flag):
    """A token budget past uint32 over items past int32 together (``batch_sampler.edges``):
    every rank read whole, each invariant of one epoch judged as at N <= 200."""
    if contract.parameter != "max_tokens":
        pytest.skip(f"contract {contract.name!r} sets no token budget, the batch sampler's numeric edge")
    case = batch_edge_case()
    (epoch,) = read_batches(SIMULATED, batch_plug, contract, case, [case.epoch])
    expect_holds(epoch.observation, ONE_EPOCH[flag].judge(epoch, batch_plug, contract))


@pytest.mark.scale
@pytest.mark.parametrize(
    ("flag", "edge"),
    [
        pytest.param(flag, size, marks=pytest.mark.invariant(flag), id=f"{flag}-N{size}")
        for flag in STREAM_ONE_EPOCH.flags
        for size in STREAM_EDGE_SIZES
    ],
)
def test_stream_at_the_numeric_edge(stream_plug, contract, flag, edge, request):
    """2^24 + 1 ids on two ranks, every rank read whole (``iterable_dataset.edges``), each
    invariant of one epoch judged as at N <= 400, on the one reading of the case."""
    case = stream_edge_case(edge, contract)
    why = _unaffordable(request, edge, case.world_size, case.world_size, _share(case))
    if why:
        pytest.skip(why)
    (epoch,) = read_stream(SIMULATED, stream_plug, contract, case, [case.epoch])
    expect_holds(epoch.observation, STREAM_ONE_EPOCH[flag].judge(epoch))
