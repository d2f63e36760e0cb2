"""The resumable extension in real process groups: each rank process builds its sampler from
the group, resumes it as ``properties/test_resume.py`` does (docs/resume-and-elastic.md, "The
resume protocol"), and the ranks all-reduce what their resumed pass holds, as DDP meets it
step by step."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sampler_conformance.core.evidence import expect_holds
from sampler_conformance.subjects.index_sampler.resume_checks import check_resumed_ranks_agree, expect_stateful
from sampler_conformance.subjects.index_sampler.resume_draws import checkpoint_at, drawn, pass_items
from sampler_conformance.subjects.index_sampler.scenarios.resume import resume

from .examples import round_trips


@pytest.mark.invariant("resumed_ranks_agree")
@round_trips
@given(data=st.data())
def test_ranks_agree_after_a_resume(group, world_size, sampler_plug, contract, drop_last, data):
    """Resumed after k items, every rank's pass holds as many items and batches as the
    others' (as many as an uninterrupted pass allows), all-reduced across the group."""
    case, epoch = drawn(data, sampler_plug, contract, drop_last, world_size=world_size)
    k = checkpoint_at(data, pass_items(contract, case))
    run = resume(group, sampler_plug, contract, case, epoch=epoch, cuts=(k,))
    expect_stateful(run, "resumed_ranks_agree")
    expect_holds(run.uninterrupted[0], check_resumed_ranks_agree(run))
