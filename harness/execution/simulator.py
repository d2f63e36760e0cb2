"""In-process runner: the W ranks of a case, simulated in one supervised sampler process.

The properties of ``properties/`` build W sampler objects with explicit ``num_replicas``
and ``rank`` and read them in turn. They do it in a separate process, the rank pool's
sampler process (``RankPool.simulator``), running the same scenarios as the ranks of a
real group (``harness.execution.scenario``). So a sampler that calls ``os._exit``, segfaults,
aborts or is killed by the OOM killer fails the test with the case, the exit status or
signal and its last frames, and the run goes on with a fresh process (forked in about
10 ms); one that raises or yields garbage becomes one readable :class:`SamplerFault`
naming the rank, the step and the case; one that blocks fails the test after
``--rank-timeout`` (one call into one rank's sampler) with its stack, and is killed.

:data:`SIMULATED` is that process, started on first use; what a subject reads through it
is the subject's (``harness.subjects.index_sampler.simulated``).
"""

from __future__ import annotations

from typing import Any

from .rank_pool import RankPool
from .scenario import Scenario

DEFAULT_TIMEOUT_S = 60.0


class _Simulation:
    """The sampler process, started on first use; what ``properties/`` pass as ``ranks``."""

    world_size = None  # each case's own: the ranks of any world size are simulated
    group_is_data_parallel = True  # no group: each simulated rank is built with its data coordinates

    def __init__(self) -> None:
        self.timeout_s = DEFAULT_TIMEOUT_S
        self._pool: RankPool | None = None

    @property
    def answering(self) -> _Simulation:
        return self

    def __repr__(self) -> str:  # as a counterexample's "Falsifying example" names it
        return "<simulated ranks>"

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
