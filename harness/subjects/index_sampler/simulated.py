"""The index sampler read by the in-process runner: fresh samplers for every simulated rank
of a case, each read once, in the sampler process of ``harness.execution.simulator``."""

from __future__ import annotations

from typing import Any

from hypothesis.strategies import DataObject

from sampler_conformance.core.case import Observation
from sampler_conformance.execution.simulator import SIMULATED

from .case import IndexCase
from .contracts import TORCH, SamplerContract
from .draws import draw_case
from .plug import SamplerPlug
from .scenarios.epochs import read_as_built


def observe(plug: SamplerPlug, case: IndexCase, contract: SamplerContract = TORCH) -> Observation[IndexCase]:
    """Fresh samplers for every rank of ``case``, each read once (set_epoch first if the case says)."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    return read_as_built(SIMULATED, plug, contract, case)[0]


def observe_drawn(
    data: DataObject, plug: SamplerPlug, contract: SamplerContract, *, drop_last: bool, **draw: Any
) -> Observation[IndexCase]:
    """Draw a case for ``plug`` under ``contract`` (``draw`` as for draw_case) and observe it."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    return observe(plug, draw_case(data, plug, drop_last=drop_last, contract=contract, **draw), contract)
