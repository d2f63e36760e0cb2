"""The index sampler's invariants that only real process groups can judge: num_replicas/rank
from the group, one process per rank, the ranks' agreement on one order, set_epoch across the
group, the contract's defaults. (The per-epoch invariants run in real groups too, as the
``W1``, ``W2``... variants of ``properties/test_per_epoch.py``.)

What only shows across processes (an order seeded from hash() of a str, an unseeded RNG
memoised per process) is caught in real groups and cannot be seen on simulated ranks.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sampler_conformance.core.comparing import check_same_indices
from sampler_conformance.core.evidence import expect_holds
from sampler_conformance.plugin import not_applicable
from sampler_conformance.subjects.index_sampler.draws import draw_case
from sampler_conformance.subjects.index_sampler.fixtures import skip_unless_buildable_explicitly
from sampler_conformance.subjects.index_sampler.order_checks import (
    MIN_COMPARABLE_ITEMS,
    check_ranks_agree,
)
from sampler_conformance.subjects.index_sampler.scenarios.epochs import (
    DRIFTING_RANK,
    GROUP_BUILDS,
    Readings,
    read_epochs,
)
from sampler_conformance.subjects.index_sampler.scenarios.steps import Build

from .examples import round_trips


def _drawn_run(group, world_size, sampler_plug, contract, drop_last, data, **fixed) -> Readings:
    """One drawn case of the group's world size (``fixed``: case fields given, not drawn),
    read once in every rank, built each way."""
    case = draw_case(data, sampler_plug, drop_last=drop_last, contract=contract, world_size=world_size, **fixed)
    return read_epochs(group, sampler_plug, contract, case, builds=GROUP_BUILDS)


@pytest.mark.invariant("group_defaults")
@round_trips
@given(data=st.data())
def test_num_replicas_and_rank_default_to_the_group(group, world_size, sampler_plug, contract, drop_last, data):
    """Left out, num_replicas and rank come from the process group: the same indices as explicit values."""
    skip_unless_buildable_explicitly(sampler_plug)
    run = _drawn_run(group, world_size, sampler_plug, contract, drop_last, data)
    explicit, from_group = run.explicit[0], run.group[0]
    expect_holds(
        from_group,
        check_same_indices(
            explicit,
            from_group,
            "group_defaults",
            f"built with {Build.EXPLICIT.value} first, then with {Build.GROUP.value}, the indices differ",
        ),
    )


@pytest.mark.invariant("agrees_across_ranks")
@round_trips
@given(data=st.data())
def test_ranks_agree_on_one_order(group, world_size, sampler_plug, contract, drop_last, data):
    """For the same (seed, epoch), every rank's process computes the same global order."""
    skip_unless_buildable_explicitly(sampler_plug)
    run = _drawn_run(group, world_size, sampler_plug, contract, drop_last, data)
    expect_holds(run.group[0], check_ranks_agree(run.single[0]))


@pytest.mark.invariant("agrees_across_ranks")
@pytest.mark.least_world_size(2)
@round_trips
@given(data=st.data())
def test_ranks_agree_after_one_rank_drew_more_from_the_global_rngs(
    group, world_size, sampler_plug, contract, drop_last, data
):
    """A script seeds every rank's global RNGs alike (torch.manual_seed(seed), numpy's,
    random's); then one rank draws once more than the others (dropout on a batch only it has,
    a collator masking with seed=None): every rank still computes the same global order. A
    sampler that draws from the global RNGs agreed only while they happened to match."""
    skip_unless_buildable_explicitly(sampler_plug)
    if world_size < 2:
        pytest.skip("one rank has no other to disagree with")
    case = draw_case(data, sampler_plug, drop_last=drop_last, contract=contract, world_size=world_size)
    global_seed = data.draw(st.integers(0, 2**32 - 1), label="global seed")
    run = read_epochs(group, sampler_plug, contract, case, builds=(Build.SINGLE,), drifted_global_seed=global_seed)
    why = (
        f"every rank seeded its global RNGs with {global_seed}, then rank {DRIFTING_RANK} drew once more from each "
        f"(as dropout on a batch only it has does): the order follows the global RNGs"
    )
    # Charged to rank 0's reading under the group's case: each rank built it as the only rank,
    # but the failure is the group's, of world_size processes (its script starts that many).
    first = run.single[0][0]
    expect_holds(replace(first, case=first.case.with_(world_size=world_size)), check_ranks_agree(run.single[0], why))


@pytest.mark.invariant("defaults")
@round_trips
@given(data=st.data())
def test_built_from_the_dataset_alone_the_defaults_are_the_contracts(group, world_size, sampler_plug, contract, data):
    """``Attr(dataset)`` in a process group, as the DistributedSampler docs and seeds 001 and 004
    build it, yields what the contract's documented defaults give (torch: shuffled, seed 0,
    nothing dropped)."""
    defaults = dict(contract.defaults)
    settable = [name for name in defaults if sampler_plug.supports(name)]
    if not settable:
        not_applicable(f"the sampler takes none of {', '.join(defaults)}, so its defaults cannot be compared")
    case = draw_case(
        data,
        sampler_plug,
        drop_last=defaults["drop_last"],
        shuffle=defaults["shuffle"],
        contract=contract,
        world_size=world_size,
        min_dataset_size=MIN_COMPARABLE_ITEMS,
    ).with_(seed=defaults["seed"])
    run = read_epochs(group, sampler_plug, contract, case, builds=GROUP_BUILDS + (Build.DEFAULTS,))
    expect_holds(
        run.defaults[0],
        check_same_indices(
            run.group[0],
            run.defaults[0],
            "defaults",
            f"built with {', '.join(f'{name}={defaults[name]!r}' for name in settable)} (the contract's defaults), then "
            f"with {Build.DEFAULTS.value}, the indices differ",
        ),
    )
