"""The batch sampler's pytest fixtures and test helpers: the plugin registers this module when
the contract under test is a batch contract (``SUBJECT.fixtures``)."""

from __future__ import annotations

import pytest

from sampler_conformance.core.evidence import not_applicable
from sampler_conformance.core.subject import Plug

from .plug import BatchPlug


@pytest.fixture(scope="session")
def batch_plug(plug: Plug) -> BatchPlug:
    assert isinstance(plug, BatchPlug), f"{plug!r} is not a batch sampler's plug"
    return plug


def requires_parameter(plug: BatchPlug, parameter: str) -> None:
    """Not applicable unless the factory takes ``parameter``."""
    if not plug.supports(parameter):
        not_applicable(plug.missing_reason(parameter))
