"""The data loader's pytest fixtures and test helpers: the plugin registers this module when
the contract under test is a data loader contract (``SUBJECT.fixtures``)."""

from __future__ import annotations

import pytest

from sampler_conformance.core.evidence import not_applicable
from sampler_conformance.core.subject import Plug

from .plug import LoaderPlug


@pytest.fixture(scope="session")
def loader_plug(plug: Plug) -> LoaderPlug:
    assert isinstance(plug, LoaderPlug), f"{plug!r} is not a data loader's plug"
    return plug


def requires_parameter(plug: LoaderPlug, parameter: str) -> None:
    """Not applicable unless the factory takes ``parameter``."""
    if not plug.supports(parameter):
        not_applicable(plug.missing_reason(parameter))
