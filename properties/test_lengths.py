"""Batch counts: every rank gets the same number of batches (the per-epoch length invariants
are generated in test_per_epoch.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sampler_conformance.core.evidence import PropertyFailure, expect_holds, raise_evidence
from sampler_conformance.execution.simulator import SIMULATED
from sampler_conformance.subjects.index_sampler.draws import draw_case
from sampler_conformance.subjects.index_sampler.loader_checks import check_equal_batch_counts
from sampler_conformance.subjects.index_sampler.scenarios.batches import batch_counts
from sampler_conformance.subjects.index_sampler.simulated import observe


@pytest.mark.invariant("equal_batches")
@given(data=st.data())
def test_equal_batch_counts(sampler_plug, contract, drop_last, data):
    """Every rank gets the same number of batches: from BatchSampler(sampler, B, drop_last) around
    an index sampler, or straight from a batch sampler."""
    case = draw_case(data, sampler_plug, drop_last=drop_last, contract=contract)
    if contract.yields_batches:
        observation = observe(sampler_plug, case, contract)
        expect_holds(
            observation, check_equal_batch_counts(list(observation.lengths), list(observation.reported_lengths))
        )
        return
    batch_drop_last = data.draw(st.booleans(), label="BatchSampler drop_last")
    counts, lengths = batch_counts(SIMULATED, sampler_plug, contract, case, batch_drop_last)
    violations = check_equal_batch_counts(counts, lengths)
    if violations:
        raise_evidence(
            PropertyFailure,
            violations,
            case,
            context=f"\n  BatchSampler(batch_size={case.batch_size}, drop_last={batch_drop_last})",
        )
