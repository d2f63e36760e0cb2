"""The index sampler's pytest fixtures and test helpers: the plugin registers this module
when the contract under test is one of the index sampler's (``SUBJECT.fixtures``).

The test modules of ``properties/`` and ``conformance/`` use them: ``sampler_plug`` (the
plugin's ``plug``, as an index sampler's), ``drop_last`` (both values, True only for a
sampler that takes it), and the helpers below.
"""

from __future__ import annotations

from typing import Any

import pytest

from sampler_conformance.core.evidence import not_applicable
from sampler_conformance.core.subject import Plug

from .checks import PER_EPOCH
from .plug import SamplerPlug

DROP_LAST_IDS = {False: "keep_last", True: "drop_last"}


@pytest.fixture(scope="session")
def sampler_plug(plug: Plug) -> SamplerPlug:
    assert isinstance(plug, SamplerPlug), f"{plug!r} is not an index sampler's plug"
    return plug


@pytest.fixture(scope="session", params=list(DROP_LAST_IDS), ids=list(DROP_LAST_IDS.values()))
def drop_last(request: pytest.FixtureRequest, sampler_plug: SamplerPlug) -> bool:
    return drop_last_variant(sampler_plug, request.param)


def drop_last_variant(plug: SamplerPlug, drop_last: bool) -> bool:
    """A test's drop_last: True needs the sampler to take drop_last, else not applicable."""
    if drop_last and not plug.supports("drop_last"):
        not_applicable(plug.missing_reason("drop_last"))
    return drop_last


def requires_parameter(plug: SamplerPlug, parameter: str) -> None:
    """Not applicable unless the sampler takes ``parameter``."""
    if not plug.supports(parameter):
        not_applicable(plug.missing_reason(parameter))


def skip_unless_buildable_explicitly(plug: SamplerPlug) -> None:
    """The check needs num_replicas/rank passed in, which a group-only sampler does not take."""
    if plug.needs_process_group:
        not_applicable(
            "the sampler takes its rank from the process group only: it cannot be built with explicit "
            "num_replicas/rank, which this check needs"
        )


def per_epoch_params() -> list[Any]:
    """``(flag, drop_last)`` for the tests generated from the per-epoch invariants (``checks.PER_EPOCH``),
    each marked with its invariant; drop_last as the invariant fixes it, else both."""
    params = []
    for per_epoch in PER_EPOCH:
        fixed = dict(per_epoch.fixed)
        for value in [bool(fixed["drop_last"])] if "drop_last" in fixed else [False, True]:
            params.append(
                pytest.param(
                    per_epoch.flag,
                    value,
                    marks=pytest.mark.invariant(per_epoch.flag),
                    id=f"{per_epoch.flag}-{DROP_LAST_IDS[value]}",
                )
            )
    return params
