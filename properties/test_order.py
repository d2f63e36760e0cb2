"""Properties 8 to 10: same order without set_epoch, a new one with it, and seeds matter."""

from __future__ import annotations

from itertools import combinations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sampler_conformance.core.comparing import check_same_indices
from sampler_conformance.core.evidence import Violation, expect_holds
from sampler_conformance.execution.simulator import SIMULATED
from sampler_conformance.pytest_plugin.crashes import judge_only_if
from sampler_conformance.subjects.index_sampler.checks import structural_violations
from sampler_conformance.subjects.index_sampler.draws import draw_case, epochs, small_seeds
from sampler_conformance.subjects.index_sampler.fixtures import requires_parameter
from sampler_conformance.subjects.index_sampler.order_checks import (
    check_orders_differ,
    check_ranks_agree,
    least_comparable,
    missing_set_epoch,
    orders_comparable,
)
from sampler_conformance.subjects.index_sampler.scenarios.epochs import builds_on, read_epochs
from sampler_conformance.subjects.index_sampler.scenarios.repeat import read_three_ways
from sampler_conformance.subjects.index_sampler.seed_range import seed_limit
from sampler_conformance.subjects.index_sampler.simulated import observe


@pytest.mark.invariant("deterministic")
@given(data=st.data())
def test_same_order_without_set_epoch(sampler_plug, contract, drop_last, data):
    """Iterating again, or a fresh sampler with the same arguments, gives the same indices,
    whatever the global RNGs hold; iterating leaves the global RNGs untouched."""
    case = draw_case(data, sampler_plug, drop_last=drop_last, contract=contract)
    global_seed = data.draw(st.integers(0, 2**32 - 2), label="global RNG seed")
    run = read_three_ways(SIMULATED, sampler_plug, contract, case, global_seed)
    first, touched = run.first, run.touched
    violations = check_same_indices(
        first, run.again, "deterministic", "iterating the same samplers twice, without set_epoch, changed the order"
    )
    violations += check_same_indices(
        first,
        run.fresh,
        "deterministic",
        "fresh samplers with the same arguments gave another order once the global RNGs were reseeded "
        "(the order must not depend on torch/numpy/random global state)",
    )
    if touched:
        violations.append(
            Violation(
                "deterministic",
                f"iterating the sampler advanced the global RNG state of {', '.join(touched)}; "
                f"a sampler must draw from its own seeded generator",
            )
        )
    expect_holds(first, violations)


@pytest.mark.invariant("reshuffles_on_set_epoch")
@given(data=st.data())
def test_set_epoch_reshuffles(ranks, sampler_plug, contract, drop_last, data):
    """One sampler object per rank for the whole run, set_epoch before each epoch, as the
    DistributedSampler documentation prescribes: for N >= 10, distinct epochs give distinct
    orders, and every epoch keeps the per-epoch invariants (in a real group, each rank's
    sampler built from the group, and the ranks agree on each epoch's order)."""
    case = draw_case(
        data,
        sampler_plug,
        drop_last=drop_last,
        shuffle=True,
        min_dataset_size=least_comparable(contract),
        contract=contract,
        world_size=ranks.world_size,
    )
    chosen = data.draw(st.lists(epochs(), min_size=3, max_size=4, unique=True), label="epochs")
    readings = read_epochs(ranks, sampler_plug, contract, case, chosen, builds_on(ranks))
    runs = readings.as_built
    if not readings.has_set_epoch:
        expect_holds(runs[0], [missing_set_epoch(case.with_(epoch=chosen[0]))])
    for k, run in enumerate(runs):
        agreement = check_ranks_agree(readings.single[k]) if readings.single else []
        expect_holds(run, structural_violations(run, contract) + agreement)
    judge_only_if(orders_comparable(runs[0], contract))  # e.g. drop_last with W > N/10: nothing to compare
    for a, b in combinations(runs, 2):
        expect_holds(
            b,
            check_orders_differ(
                a,
                b,
                "reshuffles_on_set_epoch",
                f"set_epoch({a.case.epoch}) and set_epoch({b.case.epoch}) must give different orders",
            ),
        )


@pytest.mark.invariant("seed_effective")
@given(data=st.data())
def test_seed_changes_order(sampler_plug, contract, drop_last, data, report_finding, request):
    """Distinct seeds below 2**32 give distinct orders; any seed the sampler accepts (below
    2**63, harness.subjects.index_sampler.seed_range) with any epoch below 2**31 keeps the invariants. Seed
    collisions are reported as findings, not failures."""
    requires_parameter(sampler_plug, "seed")
    case = draw_case(
        data,
        sampler_plug,
        drop_last=drop_last,
        shuffle=True,
        min_dataset_size=least_comparable(contract),
        contract=contract,
    )
    limit = seed_limit(sampler_plug)
    seed_a, seed_b = data.draw(st.lists(small_seeds(limit), min_size=2, max_size=2, unique=True), label="seeds")
    first = observe(sampler_plug, case.with_(seed=seed_a), contract)
    second = observe(sampler_plug, case.with_(seed=seed_b), contract)
    judge_only_if(orders_comparable(first, contract))
    expect_holds(
        second,
        check_orders_differ(
            first, second, "seed_effective", f"seed={seed_a} and seed={seed_b} must give different orders"
        ),
    )

    big_seed = data.draw(st.integers(0, limit - 1), label="large seed")
    big_epoch = data.draw(epochs(), label="epoch")
    big = observe(sampler_plug, case.with_(seed=big_seed, epoch=big_epoch), contract)
    expect_holds(big, structural_violations(big, contract))

    if seed_a + 2**32 < limit:
        aliased = observe(sampler_plug, case.with_(seed=seed_a + 2**32), contract)
        if check_orders_differ(first, aliased, "seed_effective", "aliased"):
            report_finding(
                request.node.nodeid,
                "seeds that differ by 2**32 give the same order: only the low 32 bits of seed + epoch "
                "reach the generator (e.g. seed=0 and seed=4294967296)",
            )
