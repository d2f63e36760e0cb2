"""Rank 0's side under torchrun: rank pools whose ranks are the workers torchrun started.

A :class:`TorchrunPool` is a :class:`RankPool` whose ranks live in other processes, on
any host: instead of pipes it posts each scenario as a command in torchrun's store and
gathers every rank's outcome from there (``harness.execution.torchrun.link``; each worker runs its
rank in a supervised child, ``harness.execution.torchrun.agent``). What went wrong is turned into a
failure by the rank pool's own code, so a raise, a death or a hang reads as in a local
run, with each rank's host named. Every wait is bounded: the workers bound each call
into the sampler by ``--rank-timeout`` themselves; once one rank has failed the others
get the pool's grace, then the request is called off and they report their stacks; a
worker whose beat stands still is reported lost.

:class:`TorchrunPools` stands in for ``RankPools`` in ``conformance/conftest.py`` (found
through the pytest plugin registered under :data:`PLUGIN_NAME`): a group of W ranks is
made of torchrun's ranks 0..W-1, so ``--world-sizes`` is torchrun's world size and the
seed experiment's 2-rank ``pair`` is ranks 0 and 1.
"""

from __future__ import annotations

import time
from typing import Any

from ..backend import BackendChoice, choose_backend
from ..faults import Collected, what_failed
from ..processes import STACK_DUMP_WAIT_S
from ..rank_pool import FAULT_GRACE_S, RankPool, RankPools
from ..scenario import Scenario
from .link import (
    PLUGIN_NAME,
    POLL_MAX_S,
    POLL_MIN_S,
    CloseGroup,
    Commands,
    Hello,
    Outcome,
    Pulse,
    RunScenario,
    abort_key,
    outcome_key,
)

# After a request is called off, how long the workers get to dump their child's stack and report.
ABORT_ANSWER_S = STACK_DUMP_WAIT_S + 10.0
# A worker beats every second while it waits; one that stood still this long is lost.
WORKER_SILENCE_S = 30.0
LIVENESS_EVERY_S = 1.0


class TorchrunPool(RankPool):
    """The group of torchrun's ranks 0..W-1, seen from rank 0."""

    def __init__(
        self,
        commands: Commands,
        hellos: list[Hello],
        world_size: int,
        backend: str,
        timeout_s: float,
        worker_modules: tuple[str, ...] = (),
    ) -> None:
        super().__init__(world_size, backend, timeout_s, local_ranks=(), worker_modules=worker_modules)
        self.commands = commands
        self.link = commands.link
        self.hosts = {hello.rank: hello.host for hello in hellos[:world_size]}
        self._generation = 0
        self._open = False

    @property
    def running(self) -> bool:
        return self._open

    def start(self) -> None:
        """A new generation: each worker starts its child, in a fresh store prefix, on the next request."""
        if not self._open:
            self._generation += 1
            self.starts += 1
            self._open = True

    def close(self, graceful: bool = True) -> None:
        if not self._open:
            return
        self._open = False
        try:
            self.commands.post(CloseGroup(self.world_size, self.backend or "", graceful))
        except Exception:  # noqa: BLE001 - at interpreter exit torchrun's store may be gone: nothing left to close
            pass

    def dump_stacks(self) -> dict[int, str]:
        return {}  # the workers send the silent ranks' stacks with their outcome

    def running_rank(self, rank: int) -> int:
        return rank

    @property
    def where(self) -> str:
        hosts = ", ".join(sorted(set(self.hosts.values())))
        return f"in a {self.backend} group of {self.world_size} ranks started by torchrun (hosts: {hosts})"

    def _exchange(self, request: Scenario) -> Collected:
        self.start()
        seq = self.commands.post(
            RunScenario(
                self.world_size, self.backend or "", self._generation, self.timeout_s, request, self.worker_modules
            )
        )
        outcomes, lost = self._gather(seq)
        collected = Collected({}, [], [], [])
        for rank, outcome in sorted(outcomes.items()):
            if outcome.error is not None:
                collected.errors.append(outcome.error)
            elif outcome.died is not None:
                collected.dead.append(outcome.died)
            elif outcome.silent is not None:
                collected.silent.append(rank)
                collected.stacks[rank] = outcome.silent.stack
            else:
                collected.replies[rank] = outcome.reply
        for rank in lost:
            collected.silent.append(rank)
            collected.stacks[rank] = "(its torchrun worker stopped reporting: no stack)"
        collected.silent.sort()
        if collected.failed and any(outcome.starting for outcome in outcomes.values()):
            failure = what_failed(self, None, collected, "starting")
            self.close(graceful=False)
            raise failure
        return collected

    def _gather(self, seq: int) -> tuple[dict[int, Outcome], list[int]]:
        """Every rank's outcome of command ``seq``, and the ranks whose worker was lost."""
        pending = set(range(self.world_size))
        outcomes: dict[int, Outcome] = {}
        lost: list[int] = []
        pulses: dict[int, Pulse] = {}
        grace_end = float("inf")
        called_off: float | None = None
        next_liveness = time.monotonic() + LIVENESS_EVERY_S
        pause = POLL_MIN_S
        while pending:
            for rank in sorted(pending):
                if self.link.has(outcome_key(seq, rank)):
                    outcomes[rank] = self.link.take(outcome_key(seq, rank))
                    pending.discard(rank)
                    pause = POLL_MIN_S
                    if outcomes[rank].failed:
                        grace_end = min(grace_end, time.monotonic() + FAULT_GRACE_S)
            if not pending:
                break
            now = time.monotonic()
            if called_off is None and now >= grace_end:
                self.link.put(abort_key(seq), True)  # the others report their stacks and stop
                called_off = now
            if called_off is not None and now > called_off + ABORT_ANSWER_S:
                lost += sorted(pending)
                break
            if now >= next_liveness:
                next_liveness = now + LIVENESS_EVERY_S
                for rank in sorted(pending):
                    pulse = pulses.setdefault(rank, Pulse(self.link, rank, WORKER_SILENCE_S))
                    if pulse.lost():
                        lost.append(rank)
                        pending.discard(rank)
                        grace_end = min(grace_end, now + FAULT_GRACE_S)
            time.sleep(pause)
            pause = min(2 * pause, POLL_MAX_S)
        return outcomes, lost


class TorchrunPools(RankPools):
    """One pool per world size (and backend), each made of torchrun's first W ranks."""

    def __init__(self, commands: Commands, hellos: list[Hello], timeout_s: float) -> None:
        super().__init__(timeout_s)
        self.commands = commands
        self.hellos = sorted(hellos, key=lambda hello: hello.rank)

    def choose(self, requested: str, world_size: int, cuda_devices: int) -> BackendChoice:
        """NCCL when each of the group's ranks has its GPU (cuda:LOCAL_RANK) and --backend allows it,
        else gloo; a group larger than torchrun's cannot run."""
        started = len(self.hellos)
        if world_size > started:
            return BackendChoice(requested, world_size, None, f"needs {world_size} ranks, torchrun started {started}")
        with_gpu = sum(hello.has_gpu for hello in self.hellos[:world_size])
        return choose_backend(requested, world_size, with_gpu)

    def _new_pool(self, world_size: int, backend: str) -> TorchrunPool:
        return TorchrunPool(self.commands, self.hellos, world_size, backend, self.timeout_s, self.worker_modules)


def started_pools(config: Any) -> TorchrunPools | None:
    """The pools of torchrun's ranks when this pytest run is rank 0's under torchrun
    (``harness.torchrun`` registers its plugin under PLUGIN_NAME), else None."""
    plugin = config.pluginmanager.get_plugin(PLUGIN_NAME)
    return plugin.pools if plugin is not None else None
