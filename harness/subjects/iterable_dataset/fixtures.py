"""The streaming dataset's pytest fixtures and test helpers: the plugin registers this module
when the contract under test is one of the streaming contracts (``SUBJECT.fixtures``)."""

from __future__ import annotations

import pytest

from sampler_conformance.core.evidence import not_applicable
from sampler_conformance.core.subject import Plug
from sampler_conformance.execution.scenario import Ranks

from .. import specs
from .plug import StreamPlug


@pytest.fixture(scope="session")
def stream_plug(plug: Plug) -> StreamPlug:
    assert isinstance(plug, StreamPlug), f"{plug!r} is not a streaming dataset's plug"
    return plug


def requires_parameter(plug: StreamPlug, parameter: str) -> None:
    """Not applicable unless the factory takes ``parameter``."""
    if not plug.supports(parameter):
        not_applicable(plug.missing_reason(parameter))


def requires_building_another_ranks(ranks: Ranks, plug: StreamPlug) -> None:
    """Not applicable where a process cannot build another rank's dataset: one that takes its
    rank from the process group, or one that takes the mesh, on a mesh."""
    if plug.needs_process_group:
        not_applicable(
            "the dataset takes its rank from the process group or the node it runs on, whatever rank it is "
            "told: a process cannot build another rank's dataset, which this check needs (the lock-step "
            "epochs still judge how the ranks' parts fit together)"
        )
    specs.requires_building_another_ranks(ranks, plug)
