"""The weighted sampler's pytest fixtures and test helpers: the plugin registers this module
when the contract under test is a weighted contract (``SUBJECT.fixtures``)."""

from __future__ import annotations

import pytest
from hypothesis import strategies as st

from sampler_conformance.core.evidence import not_applicable
from sampler_conformance.core.subject import Plug
from sampler_conformance.pytest_plugin.crashes import judge_only_if

from .case import WeightedCase
from .draws import draw_weighted_case, draws_for_distinct_streams
from .plug import WeightedPlug

# Streams compared for a difference are at least long enough to tell two apart, and at most
# this: a case whose weights need more (nearly all weight on one item) is not judged.
MAX_COMPARED_DRAWS = 4096


@pytest.fixture(scope="session")
def weighted_plug(plug: Plug) -> WeightedPlug:
    assert isinstance(plug, WeightedPlug), f"{plug!r} is not a weighted sampler's plug"
    return plug


def requires_parameter(plug: WeightedPlug, parameter: str) -> None:
    """Not applicable unless the factory takes ``parameter``."""
    if not plug.supports(parameter):
        not_applicable(plug.missing_reason(parameter))


def draw_comparable_case(data: st.DataObject, plug: WeightedPlug, **fixed) -> WeightedCase:
    """A case whose streams are long enough that two independent ones differ but by a chance below 1e-12."""
    case = draw_weighted_case(data, plug, min_dataset_size=2, **fixed)
    needed = draws_for_distinct_streams(case.probabilities)
    judge_only_if(needed is not None and needed <= MAX_COMPARED_DRAWS)
    assert needed is not None
    return case.with_(num_samples=max(case.num_samples, needed))
