"""What every torchrun worker does: run its rank of each group in a child process it supervises.

The worker itself never runs sampler code. If it did, a sampler that calls ``os._exit``
or segfaults would kill a torchrun worker, and torchrun would tear the whole job down
before rank 0 could say which rank died and how. So each worker keeps a rank pool of its
own rank only (``RankPool(local_ranks=(rank,))``): one child process per group, spawned as
the local pools spawn theirs (``harness.execution.rank_body``), joining the group through torchrun's
store under a prefix fresh for each (re)start. The worker relays rank 0's commands to the
child and the child's outcome back (``harness.execution.torchrun.link``), with the rank pool's
bounds: ``--rank-timeout`` from the child's latest call into the sampler, its exit code
and last stack when it dies, its stack when it hangs. A rank that died or hung is killed
at once; rank 0 then closes the group on every worker and the next request starts a new
generation.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from ..faults import Collected
from ..messages import RankSilent, StoreRendezvous
from ..rank_pool import RankPool
from .link import (
    CONTROLLER,
    FINISHED_KEY,
    CloseGroup,
    Finish,
    Hello,
    Link,
    Outcome,
    Pulse,
    RunScenario,
    abort_key,
    command_key,
    outcome_key,
)

BEAT_EVERY_S = 1.0
# Rank 0 beats every BEAT_EVERY_S while the run lasts; a worker that has not seen it beat
# for this long gives up (torchrun normally tears the job down long before).
CONTROLLER_SILENCE_S = 120.0
# Exit code of a worker that lost rank 0: pytest's "internal error".
LOST_CONTROLLER_EXIT = 3


class Agent:
    """Serves rank 0's commands for one torchrun rank until told to finish."""

    def __init__(self, link: Link, hello: Hello, master: tuple[str, int], prefix: str) -> None:
        self.link = link
        self.hello = hello
        self.master = master
        self.prefix = prefix  # of the groups' rendezvous keys, in torchrun's store
        self.pools: dict[tuple[int, str], tuple[int, RankPool]] = {}  # (W, backend) -> (generation, pool)
        self._last_beat = 0.0

    def serve(self, on_finish: Callable[[int], None] | None = None) -> int:
        """Run commands in order; return the exit code rank 0 decided (or LOST_CONTROLLER_EXIT).
        ``on_finish(code)`` is called as soon as the code is known."""
        seq = 0
        controller = Pulse(self.link, CONTROLLER, CONTROLLER_SILENCE_S)
        try:
            while True:
                while not self.link.wait_for(command_key(seq), BEAT_EVERY_S):
                    self._beat()
                    if controller.lost():
                        return LOST_CONTROLLER_EXIT
                command = self.link.take(command_key(seq))
                if isinstance(command, Finish):
                    if on_finish is not None:
                        on_finish(command.exit_code)
                    self.close()
                    self.link.count(FINISHED_KEY, 1)
                    return command.exit_code
                if isinstance(command, CloseGroup):
                    self._close_group((command.world_size, command.backend), command.graceful)
                elif isinstance(command, RunScenario) and self.hello.rank < command.world_size:
                    self.link.put(outcome_key(seq, self.hello.rank), self._run(seq, command))
                seq += 1
        finally:
            self.close()

    def close(self) -> None:
        for key in list(self.pools):
            self._close_group(key, graceful=True)

    def _close_group(self, key: tuple[int, str], graceful: bool) -> None:
        entry = self.pools.pop(key, None)
        if entry is not None:
            entry[1].close(graceful=graceful)

    def _run(self, seq: int, command: RunScenario) -> Outcome:
        key = (command.world_size, command.backend)

        def stop() -> bool:
            return self._called_off(seq)

        generation, pool = self.pools.get(key, (None, None))
        if pool is None or generation != command.generation:
            self._close_group(key, graceful=False)
            pool = RankPool(
                command.world_size,
                command.backend,
                command.timeout_s,
                local_ranks=(self.hello.rank,),
                rendezvous=self._rendezvous(command),
                worker_modules=command.worker_modules,
            )
            self.pools[key] = (command.generation, pool)
            started = pool.launch(should_stop=stop)
            if started.failed:
                outcome = self._outcome(pool, started, starting=True)
                self._close_group(key, graceful=False)
                return outcome
        pool.timeout_s = command.timeout_s
        outcome = self._outcome(pool, pool.send(command.scenario, should_stop=stop))
        if outcome.died is not None or outcome.silent is not None:
            self._close_group(key, graceful=False)  # the group is broken: rank 0 restarts it
        return outcome

    def _rendezvous(self, command: RunScenario) -> StoreRendezvous:
        host, port = self.master
        return StoreRendezvous(
            host=host,
            port=port,
            prefix=f"{self.prefix}group/{command.world_size}-{command.backend}/{command.generation}/",
            local_rank=self.hello.local_rank,
            local_world_size=self.hello.local_world_size,
        )

    def _outcome(self, pool: RankPool, collected: Collected, starting: bool = False) -> Outcome:
        rank = self.hello.rank
        if collected.errors:
            return Outcome(rank, error=collected.errors[0], starting=starting)
        if collected.dead:
            return Outcome(rank, died=replace(collected.dead[0], host=self.hello.host), starting=starting)
        if collected.silent:
            stack = pool.dump_stacks().get(rank, "(no stack written)")
            return Outcome(rank, silent=RankSilent(rank, stack, rank, self.hello.host), starting=starting)
        return Outcome(rank, reply=collected.replies[rank], starting=starting)

    def _called_off(self, seq: int) -> bool:
        """Asked while the child works: beat, and whether rank 0 called the command off."""
        self._beat()
        return self.link.has(abort_key(seq))

    def _beat(self) -> None:
        now = time.monotonic()
        if now - self._last_beat >= BEAT_EVERY_S:
            self.link.beat(self.hello.rank)
            self._last_beat = now
