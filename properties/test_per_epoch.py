"""The per-epoch invariants, generated from the per-epoch table (``harness.subjects.index_sampler.checks.PER_EPOCH``),
where each is declared on its check.

Each is judged on one reading of every rank (and, for the layouts and whole batches, the
one-rank reading it is cut from): one test per invariant and drop_last, drawn by Hypothesis,
run on simulated ranks and in real process groups (``ranks``), where each rank is in its own
process and builds its sampler from the group. What only shows across processes (an order
seeded from hash() of a str, an unseeded RNG memoised per process) is caught there.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sampler_conformance.core.evidence import expect_holds
from sampler_conformance.subjects.index_sampler.checks import PER_EPOCH, judge
from sampler_conformance.subjects.index_sampler.draws import draw_case
from sampler_conformance.subjects.index_sampler.fixtures import (
    drop_last_variant,
    per_epoch_params,
    requires_parameter,
    skip_unless_buildable_explicitly,
)
from sampler_conformance.subjects.index_sampler.scenarios.epochs import read_as_built


@pytest.mark.parametrize(("flag", "drop_last"), per_epoch_params())
@given(data=st.data())
def test_per_epoch_invariant(ranks, sampler_plug, contract, flag, drop_last, data):
    """The invariant holds on every drawn case (with the case fields it fixes)."""
    per_epoch = PER_EPOCH[flag]
    drop_last_variant(sampler_plug, drop_last)
    for parameter in per_epoch.invariant.needs:
        requires_parameter(sampler_plug, parameter)
    if per_epoch.against_one_rank:
        skip_unless_buildable_explicitly(sampler_plug)
    fixed: dict[str, Any] = {name: value for name, value in per_epoch.fixed if name != "drop_last"}
    case = draw_case(data, sampler_plug, drop_last=drop_last, contract=contract, world_size=ranks.world_size, **fixed)
    observation, one_rank = read_as_built(ranks, sampler_plug, contract, case, one_rank=per_epoch.against_one_rank)
    expect_holds(observation, judge(flag, observation, contract, one_rank))
