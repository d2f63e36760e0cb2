"""The streaming dataset's pytest fixtures and test helpers: the plugin registers this module
when the contract under test is one of the streaming contracts (``SUBJECT.fixtures``)."""

from __future__ import annotations

import pytest

from sampler_conformance.core.evidence import not_applicable
from sampler_conformance.core.subject import Plug

from .plug import StreamPlug


@pytest.fixture(scope="session")
def stream_plug(plug: Plug) -> StreamPlug:
    assert isinstance(plug, StreamPlug), f"{plug!r} is not a streaming dataset's plug"
    return plug


def requires_parameter(plug: StreamPlug, parameter: str) -> None:
    """Not applicable unless the factory takes ``parameter``."""
    if not plug.supports(parameter):
        not_applicable(plug.missing_reason(parameter))
