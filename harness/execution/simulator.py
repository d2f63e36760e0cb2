"""In-process runner: the W ranks of a case, simulated in one supervised sampler process.

The properties of ``properties/`` build W sampler objects with explicit ``num_replicas``
and ``rank`` and read them in turn. They do it in a separate process, the rank pool's
sampler process (``RankPool.simulator``), running the same scenarios as the ranks of a
real group (``harness.subjects.index_sampler.scenarios``). So a sampler that calls ``os._exit``, segfaults,
aborts or is killed by the OOM killer fails the test with the case, the exit status or
signal and its last frames, and the run goes on with a fresh process (forked in about
10 ms); one that raises or yields garbage becomes one readable :class:`SamplerFault`
naming the rank, the step and the case; one that blocks fails the test after
``--rank-timeout`` (one call into one rank's sampler) with its stack, and is killed.
"""

from __future__ import annotations

from typing import Any

from hypothesis.strategies import DataObject

from sampler_conformance.core.case import Case, Observation
from sampler_conformance.core.contracts import TORCH, Contract
from sampler_conformance.subjects.index_sampler.draws import draw_case
from sampler_conformance.subjects.index_sampler.plug import SamplerPlug
from sampler_conformance.subjects.index_sampler.scenarios import Scenario
from sampler_conformance.subjects.index_sampler.scenarios.epochs import read_epochs

from .rank_pool import RankPool

DEFAULT_TIMEOUT_S = 60.0


class _Simulation:
    """The sampler process, started on first use; what ``properties/`` pass as ``ranks``."""

    def __init__(self) -> None:
        self.timeout_s = DEFAULT_TIMEOUT_S
        self._pool: RankPool | None = None

    def request(self, scenario: Scenario) -> list[Any]:
        __tracebackhide__ = True  # failures point at the sampler, not the harness
        if self._pool is None:
            self._pool = RankPool.simulator(self.timeout_s)
        return self._pool.request(scenario)

    def begin_test(self) -> None:
        if self._pool is not None:
            self._pool.begin_test()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None


SIMULATED = _Simulation()


def configure(timeout_s: float) -> None:
    """``--rank-timeout``: the bound on one call into one rank's sampler."""
    SIMULATED.close()
    SIMULATED.timeout_s = timeout_s


def begin_test() -> None:
    """A new test: cases the sampler hung on in earlier tests no longer stop this one
    (up to the pool's per-session allowance)."""
    SIMULATED.begin_test()


def close() -> None:
    SIMULATED.close()


def observe(plug: SamplerPlug, case: Case, contract: Contract = TORCH) -> Observation:
    """Fresh samplers for every rank of ``case``, each read once (set_epoch first if the case says)."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    return read_epochs(SIMULATED, plug, contract, case, (case.epoch,)).explicit[0]


def observe_drawn(
    data: DataObject, plug: SamplerPlug, contract: Contract, *, drop_last: bool, **draw: Any
) -> Observation:
    """Draw a case for ``plug`` under ``contract`` (``draw`` as for draw_case) and observe it."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    return observe(plug, draw_case(data, plug, drop_last=drop_last, contract=contract, **draw), contract)
