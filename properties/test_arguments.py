"""Properties 11 and 12: invalid arguments are refused; the sampler runs without crashing, edge sizes included."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sampler_conformance.core.evidence import expect_holds, fail
from sampler_conformance.execution.simulator import SIMULATED
from sampler_conformance.plugin import not_applicable
from sampler_conformance.subjects.index_sampler.case import IndexCase
from sampler_conformance.subjects.index_sampler.checks import structural_violations
from sampler_conformance.subjects.index_sampler.fixtures import requires_parameter
from sampler_conformance.subjects.index_sampler.plug import DEFAULT_SPEC
from sampler_conformance.subjects.index_sampler.scenarios.refusal import refusal
from sampler_conformance.subjects.index_sampler.seed_range import (
    PROBE_SIZE,
    late_refusal,
    reference_seed_range,
    seed_range,
)
from sampler_conformance.subjects.index_sampler.simulated import observe


def invalid_ranks() -> st.SearchStrategy[tuple[int, int]]:
    """(num_replicas, rank) pairs a sampler must refuse: rank >= W, rank < 0, or W <= 0."""
    world = st.integers(1, 64)
    return st.one_of(
        world.flatmap(lambda w: st.tuples(st.just(w), st.integers(w, w + 8))),
        st.tuples(st.integers(1, 64), st.integers(-8, -1)),
        st.tuples(st.integers(-4, 0), st.integers(-2, 4)),
    )


@pytest.mark.invariant("edge_sizes")
def test_seeds_the_reference_accepts(sampler_plug, contract):
    """A seed that torch's DistributedSampler, the reference, accepts with every epoch the tests
    set is accepted too, or refused when the sampler is built: one that raises later, at the
    epoch that reaches it, crashes a job hours in (numpy's RandomState at seed + epoch = 2**32).
    The seed range is probed once per process, before the first test (seed_range.py)."""
    requires_parameter(sampler_plug, "seed")
    reference = reference_seed_range(SIMULATED, DEFAULT_SPEC)
    message = late_refusal(seed_range(sampler_plug), reference, DEFAULT_SPEC)
    if message is not None:
        seed, epoch, _ = seed_range(sampler_plug).refused_late  # type: ignore[misc]  # set where message is
        fail("edge_sizes", message, IndexCase(dataset_size=PROBE_SIZE, world_size=1, seed=seed, epoch=epoch))


@pytest.mark.invariant("validates_arguments")
@given(arguments=invalid_ranks())
def test_invalid_arguments_refused(sampler_plug, contract, arguments):
    """Constructing with rank >= W, rank < 0 or W <= 0 raises at once."""
    world_size, rank = arguments
    case = IndexCase(dataset_size=8, world_size=world_size).within(contract)
    if refusal(SIMULATED, sampler_plug, contract, case, world_size, rank) is None:
        fail(
            "validates_arguments",
            f"constructing with num_replicas={world_size}, rank={rank} should raise (DistributedSampler raises "
            f"ValueError('Invalid rank ...')), but it returned a sampler; a misconfigured job would then "
            f"silently train on the wrong shard",
            case,
        )


EDGE_SIZES = [
    pytest.param(0, 1, id="N=0-W=1"),
    pytest.param(0, 4, id="N=0-W=4"),
    pytest.param(1, 1, id="N=1-W=1"),
    pytest.param(1, 4, id="N=1-W=4"),
    pytest.param(2, 8, id="N=2-W=8"),
    pytest.param(3, 8, id="N=3-W=8"),
    pytest.param(5, 3, id="N=5-W=3"),
    pytest.param(4, 4, id="N=4-W=4"),
    pytest.param(7, 1, id="N=7-W=1"),
]


@pytest.mark.invariant("edge_sizes")
@pytest.mark.parametrize("shuffle", [True, False], ids=["shuffle", "no_shuffle"])
@pytest.mark.parametrize(("dataset_size", "world_size"), EDGE_SIZES)
def test_edge_sizes(sampler_plug, contract, drop_last, shuffle, dataset_size, world_size):
    """N = 0, N = 1, N < W, N = W and W = 1 run without crashing; what they yield is judged by
    every per-epoch invariant, each violation charged to its own."""
    if not shuffle and not sampler_plug.supports("shuffle"):
        not_applicable(sampler_plug.missing_reason("shuffle"))
    if dataset_size == 0 and not contract.finite:
        not_applicable("an endless sampler over an empty dataset never yields")
    case = IndexCase(dataset_size, world_size, shuffle=shuffle, drop_last=drop_last).within(contract)
    outside = contract.outside(case.dataset_size, case.batch_size)
    if outside:
        not_applicable(outside)
    observation = observe(sampler_plug, case, contract)
    one_rank = observe(sampler_plug, case.with_(world_size=1), contract)
    expect_holds(observation, structural_violations(observation, contract, one_rank))
