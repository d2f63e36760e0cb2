"""The weighted sampler's pytest fixtures and test helpers: the plugin registers this module
when the contract under test is a weighted contract (``SUBJECT.fixtures``)."""

from __future__ import annotations

import pytest

from sampler_conformance.core.evidence import not_applicable
from sampler_conformance.core.subject import Plug

from .plug import WeightedPlug


@pytest.fixture(scope="session")
def weighted_plug(plug: Plug) -> WeightedPlug:
    assert isinstance(plug, WeightedPlug), f"{plug!r} is not a weighted sampler's plug"
    return plug


def requires_parameter(plug: WeightedPlug, parameter: str) -> None:
    """Not applicable unless the factory takes ``parameter``."""
    if not plug.supports(parameter):
        not_applicable(plug.missing_reason(parameter))
