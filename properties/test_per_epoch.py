"""The per-epoch invariants, generated from the per-epoch table (``harness.subjects.index_sampler.checks.PER_EPOCH``).

Each is judged on one reading of every simulated rank (and, for the layouts and whole
batches, the one-rank reading it is cut from): one test per invariant and drop_last,
drawn by Hypothesis. ``conformance/test_process_groups.py`` generates the same tests in
real process groups.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sampler_conformance.core.evidence import expect_holds
from sampler_conformance.subjects.index_sampler.checks import PER_EPOCH_BY_FLAG, judge
from sampler_conformance.subjects.index_sampler.fixtures import drop_last_variant, per_epoch_params, requires_parameter
from sampler_conformance.subjects.index_sampler.simulated import observe, observe_drawn


@pytest.mark.parametrize(("flag", "drop_last"), per_epoch_params())
@given(data=st.data())
def test_per_epoch_invariant(sampler_plug, contract, flag, drop_last, data):
    """The invariant holds on every drawn case (with the case fields it fixes)."""
    per_epoch = PER_EPOCH_BY_FLAG[flag]
    drop_last_variant(sampler_plug, drop_last)
    for parameter in per_epoch.invariant.needs:
        requires_parameter(sampler_plug, parameter)
    fixed = {name: value for name, value in per_epoch.fixed if name != "drop_last"}
    observation = observe_drawn(data, sampler_plug, contract, drop_last=drop_last, **fixed)
    one_rank = (
        observe(sampler_plug, observation.case.with_(world_size=1), contract) if per_epoch.against_one_rank else None
    )
    expect_holds(observation, judge(flag, observation, contract, one_rank))
