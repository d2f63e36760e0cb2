"""``+scalable``: one rank's cost follows its share of the dataset, not N.

The cost is measured once per run, before the draws (``harness.execution.cost``); this test
judges that measurement, in whichever process runs it.
"""

from __future__ import annotations

import pytest

from sampler_conformance.core.evidence import fail
from sampler_conformance.pytest_plugin.state import state
from sampler_conformance.subjects.index_sampler.case import IndexCase
from sampler_conformance.subjects.index_sampler.cost_checks import check_cost_follows_share


@pytest.mark.invariant("cost_follows_share")
def test_cost_follows_share(sampler_plug, contract, request):
    """At a fixed share of indices per rank, as N grows a thousandfold, rank 0's peak memory
    and time to its first index stay within tenfold (docs/scale.md)."""
    current = state(request.config)
    if current.cost is None:
        pytest.skip(f"one rank's cost was not measured: {current.cost_not_measured}")
    if not current.cost.judged_span():
        pytest.skip(
            "the probe at a fixed share measured too few sizes to judge the growth: " + current.cost.why_short()
        )
    for violation in check_cost_follows_share(current.cost):
        largest = current.cost.at_share[-1]
        fail(violation.flag, violation.message, IndexCase(largest.size, largest.world_size).within(contract))
