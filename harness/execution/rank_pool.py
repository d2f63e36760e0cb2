"""The rank pool (controller side): live processes that run scenarios on the sampler.

Two kinds, one implementation:

- W rank processes in one real process group (``conformance/``). Spawning a group costs
  seconds (importing torch in every rank, the rendezvous); a round trip to live ranks
  costs milliseconds. So a pool is started once per world size and fed scenarios over
  pipes, one per case.
- One sampler process with no group (``backend=None``) that simulates the W ranks of each
  case in turn: the in-process runner. It is forked from a fork server that has torch
  imported, so restarting it after the sampler killed it costs about 10 ms.

Under torchrun (``harness.torchrun``) the ranks of one group run on several hosts: each
torchrun worker keeps a pool of its own rank only (``local_ranks``, rendezvous in
torchrun's store), and rank 0's controller (``harness.execution.torchrun.pool``) is a subclass that
reaches them through the store; both turn what the ranks did into failures with the code
below.

Every wait is bounded: ``--rank-timeout`` bounds one call into one rank's sampler (the
processes note when each call starts). A rank that raises comes back with its
traceback; a rank that dies is reported with its exit code or signal and its last
stack; ranks that do not answer in time are reported with every rank's stack
(faulthandler, on SIGUSR1). After a death or a hang the pool is torn down and rebuilt
on the next request. Processes are killed and joined with bounds at teardown, at
session end and at interpreter exit.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

from sampler_conformance.core.case import Case
from sampler_conformance.core.evidence import (
    FAULT,
    HarnessError,
    SamplerDeath,
    SamplerHang,
    Violation,
)

from . import memory_budget, rank_body
from .backend import BackendChoice, choose_backend
from .faults import Collected, what_failed
from .fork_server import separate_fork_server_context, start_separate_fork_server
from .hash_seeds import hashes_as
from .messages import RankDied, RankError, RankSetup, Reply, Shutdown, StoreRendezvous
from .processes import (
    FORK_SERVER_PRELOAD,
    KILL_JOIN_TIMEOUT_S,
    Died,
    Rank,
    close_at_exit,
    dump_stacks,
    fork_server,
    kill_rank,
    read_new,
    receive,
    reserve_loopback_port,
)
from .scenario import CallWatch, Scenario

# Starting means importing torch in W processes at once; on 2 cores that alone takes
# seconds per rank, so start-up gets at least this long whatever --rank-timeout says.
MIN_START_TIMEOUT_S = 60.0
# Once one rank has raised or died, how long the others get to answer before they are
# presumed stuck in a collective the failed rank never joins (at once for ranks that say
# they wait in the suite's own collective).
FAULT_GRACE_S = 2.0
GRACE_POLL_S = 0.02
# A sampler that hung this many times in one pool hangs again: later cases fail at once.
# More than one, so that one hang on a rare case still leaves the other tests judged.
HANGS_PER_SESSION = 2
# The longest a controller's wait sleeps at a time. CPython runs signal handlers in the main
# thread, and only once it wakes: a Ctrl-C the kernel hands to one of torch's native threads
# would otherwise wait out the whole --rank-timeout (selftests' ctrl-c test, 60 s). Also how
# often a wait that can be called off (should_stop) asks whether it is.
POLL_S = 0.2
JOIN_TIMEOUT_S = 5.0


class RankPool:
    """W rank processes of one process group, or (``backend=None``) one process simulating
    the ranks of each case; started on first use and reused."""

    def __init__(
        self,
        world_size: int,
        backend: str | None,
        timeout_s: float,
        *,
        local_ranks: Sequence[int] | None = None,
        rendezvous: StoreRendezvous | None = None,
        worker_modules: Sequence[str] = (),
    ) -> None:
        if backend is None and world_size != 1:
            raise ValueError("a pool without a process group is one process, which simulates the ranks")
        self.world_size = world_size
        self.backend = backend
        self.timeout_s = timeout_s
        # The ranks this process runs: all of them, or (under torchrun) its own one.
        self.local_ranks = tuple(range(world_size) if local_ranks is None else local_ranks)
        self.rendezvous = rendezvous  # None: a private file; else torchrun's store, under its prefix
        self.worker_modules = tuple(worker_modules)  # what its ranks' loader workers start with
        self.hosts: dict[int, str] = {}  # rank -> host, named in failures when ranks run on several hosts
        self._ranks: list[Rank] = []
        self._directory: Path | None = None
        self._port_holder: socket.socket | None = None
        self.starts = 0  # how many times the group was (re)built
        # A rank died or hung on this case: later cases of the same test are not run.
        self._fault_case: Case | None = None
        # Per sampler spec, the cases it hung on. Each hang costs a --rank-timeout; after
        # HANGS_PER_SESSION of them, its later cases fail at once, in every test.
        self._hangs: dict[str, list[Case]] = {}
        close_at_exit(self)

    @classmethod
    def simulator(cls, timeout_s: float) -> RankPool:
        """The in-process runner's sampler process."""
        return cls(1, None, timeout_s)

    @property
    def simulated(self) -> bool:
        return self.backend is None

    @property
    def group_is_data_parallel(self) -> bool:
        return True

    @property
    def answering(self) -> RankPool:
        return self

    @property
    def running(self) -> bool:
        return bool(self._ranks)

    @property
    def pids(self) -> tuple[int, ...]:
        return tuple(r.pid for r in self._ranks)

    def begin_test(self) -> None:
        """Forget a fault of an earlier test: the next request runs (on rebuilt processes),
        unless the sampler has used up its hangs for the session (HANGS_PER_SESSION)."""
        self._fault_case = None

    # ---- lifetime ---------------------------------------------------------------------

    def start(self) -> None:
        if self._ranks:
            return
        collected = self.launch()
        if collected.failed:
            failure = what_failed(self, None, collected, "starting")
            self.close(graceful=False)
            raise failure

    def launch(self, should_stop: Callable[[], bool] | None = None) -> Collected:
        """Start this process's ranks and wait (bounded) until each has joined the group."""
        self._directory = Path(tempfile.mkdtemp(prefix=f"rank-pool-{self._name}-"))
        if not self.simulated and self.rendezvous is None:
            self._port_holder = reserve_loopback_port()
        self.starts += 1
        if self.rendezvous is not None:
            master_port = self.rendezvous.port
        else:
            master_port = self._port_holder.getsockname()[1] if self._port_holder else 0
        for position, rank in enumerate(self.local_ranks):
            context = self._context(position)
            forked = context.get_start_method() == "forkserver"
            setup = RankSetup(
                rank=rank,
                world_size=self.world_size,
                backend=self.backend,
                init_file=str(self._directory / f"rendezvous-{self.starts}"),
                master_port=master_port,
                stack_file=str(self._directory / f"stacks-rank{rank}.txt"),
                controller_pid=None if forked else os.getpid(),
                collective_timeout_s=2 * self.timeout_s,
                watch=CallWatch.create(context),
                store=self.rendezvous,
                worker_modules=self.worker_modules,
                memory_budget=memory_budget.budget(),
                environ=dict(os.environ),
            )
            ours, theirs = context.Pipe(duplex=True)
            process = context.Process(
                target=rank_body.main, args=(setup, theirs), name=f"rank-{rank}-of-{self.world_size}"
            )
            process.start()
            theirs.close()
            self._ranks.append(Rank(rank, process, ours, Path(setup.stack_file), setup.watch))
        return self._collect(max(self.timeout_s, MIN_START_TIMEOUT_S), follow_calls=False, should_stop=should_stop)

    def _context(self, position: int) -> Any:
        """Where the ``position``-th of this process's ranks starts from. The sampler process,
        and the first rank of each group, fork from this process's fork server where this
        process hashes as position 0 should (``hash_seeds``), else from position 0's own
        server; every other position forks from a fork server of its own, a fresh interpreter
        with its own hash seed, as under torchrun. No two ranks of a group may come from one parent: they would
        share its hash seed and unseeded RNG state, and a shuffle keyed on hash() of a str
        (HashSeededShuffle) would agree across them and pass. Each server imports torch once,
        so a group rebuilt after a fault forks again in milliseconds."""
        if (self.simulated or position == 0) and hashes_as(0):
            return fork_server()
        separate = separate_fork_server_context(0 if self.simulated else position, FORK_SERVER_PRELOAD)
        return separate if separate is not None else multiprocessing.get_context("spawn")

    def close(self, graceful: bool = True) -> None:
        """Stop every rank: ask, wait with a bound, then kill its process group and reap it."""
        ranks, self._ranks = self._ranks, []
        if graceful:
            for r in ranks:
                try:
                    r.conn.send(Shutdown())
                except OSError:
                    pass
            deadline = time.monotonic() + JOIN_TIMEOUT_S
            for r in ranks:
                r.process.join(max(0.0, deadline - time.monotonic()))
        for r in ranks:
            kill_rank(r)
        for r in ranks:
            r.process.join(KILL_JOIN_TIMEOUT_S)
            r.conn.close()
        if self._port_holder is not None:
            self._port_holder.close()
            self._port_holder = None
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)
            self._directory = None

    # ---- one case -----------------------------------------------------------------------

    def __repr__(self) -> str:  # as a counterexample's "Falsifying example" names it
        return f"<process group of {self.world_size} ranks, {self.backend or 'no backend'}>"

    def request(self, request: Scenario) -> list[Reply]:
        """Send ``request`` to every rank; return the replies in rank order (simulated
        ranks: the sampler process's replies for each).

        Raises :class:`SamplerFault` when a rank raised (or the sampler process died: it
        restarts in milliseconds, so Hypothesis may go on shrinking), and
        :class:`SamplerHang` when a rank of a group died or any did not answer in time,
        with the sampler's frames as evidence. A fault with no sampler frame anywhere is
        the suite's: where a rank hung or died, the request is tried once more on fresh
        processes, then :class:`HarnessError` is raised; where a rank raised, it is raised at
        once (a fresh group would raise the same, and each try costs a group restart).
        """
        __tracebackhide__ = True  # failures point at the sampler, not the harness
        try:
            return self._request_once(request)
        except HarnessError as first:
            self.close(graceful=False)
            if first.raised:
                raise
            try:
                return self._request_once(request)
            except HarnessError as second:
                raise HarnessError(
                    f"{second}\n  (the same request had failed once before, and was retried on a "
                    f"fresh group: {str(first).splitlines()[0]})"
                ) from None

    def _request_once(self, request: Scenario) -> list[Reply]:
        __tracebackhide__ = True  # failures point at the sampler, not the harness
        case = request.case
        hangs = self._hangs.setdefault(request.spec, [])
        if len(hangs) >= HANGS_PER_SESSION:
            raise SamplerHang(
                [
                    Violation(
                        FAULT,
                        f"the sampler hung earlier in this session on case {hangs[0].describe()} and "
                        f"{len(hangs) - 1} more {self.where}; later cases there are not run, so that a "
                        f"hanging sampler costs {HANGS_PER_SESSION} --rank-timeouts, not one per test",
                    )
                ],
                case,
            )
        if self._fault_case is not None:
            raise SamplerHang(
                [
                    Violation(
                        FAULT,
                        f"the sampler failed earlier in this test on case {self._fault_case.describe()} "
                        f"{self.where}; later cases of this test are not run, so that "
                        f"a hang costs one --rank-timeout (a dead rank one restart), not one per example",
                    )
                ],
                case,
            )
        collected = self._exchange(request)
        if collected.failed:
            # Ranks that all answered, some with an error, are back in their loop: keep them.
            keep = not (collected.dead or collected.silent)
            failure = what_failed(self, case, collected, f"running {type(request).__name__}")
            if not keep:
                self.close(graceful=False)
                if isinstance(failure, (SamplerHang, SamplerDeath)):
                    self._fault_case = case
                if isinstance(failure, SamplerHang):
                    hangs.append(case)
            raise failure
        if self.simulated:
            return list(collected.replies[0].replies)
        return [collected.replies[rank] for rank in range(self.world_size)]

    def _exchange(self, request: Scenario) -> Collected:
        """Start the ranks if needed, send them ``request``, collect what they did."""
        self.start()
        return self.send(request)

    def send(self, request: Scenario, should_stop: Callable[[], bool] | None = None) -> Collected:
        """Send ``request`` to this process's ranks and collect what they did (see _collect)."""
        for r in self._ranks:
            try:
                r.conn.send(request)
            except OSError:
                pass  # it died; _collect reports how
        return self._collect(self.timeout_s, should_stop=should_stop)

    def _collect(
        self, timeout_s: float, follow_calls: bool = True, should_stop: Callable[[], bool] | None = None
    ) -> Collected:
        """Wait for every rank's message. ``follow_calls``: the bound runs from the start of
        the latest call into the sampler on a rank still pending (one call, one bound),
        else from now. ``should_stop``, asked every POLL_S: stop waiting early (the ranks
        still pending are silent): under torchrun, rank 0 calls off a request."""
        pending = {r.rank: r for r in self._ranks}
        collected = Collected({}, [], [], [])
        started = time.monotonic()
        grace_end = float("inf")
        while pending:
            latest = max((r.watch.call_started.value for r in pending.values()), default=0.0) if follow_calls else 0.0
            remaining = min(max(started, latest) + timeout_s, grace_end) - time.monotonic()
            if remaining <= 0:
                break
            if grace_end < float("inf"):
                if all(r.watch.in_collective.value for r in pending.values()):
                    break  # every rank left waits in the suite's collective for the rank that failed
                remaining = min(remaining, GRACE_POLL_S)  # the flag wakes no wait: look again soon
            if should_stop is not None and should_stop():
                break
            remaining = min(remaining, POLL_S)
            waitables = [r.conn for r in pending.values()] + [r.process.sentinel for r in pending.values()]
            wait(waitables, timeout=remaining)
            for r in list(pending.values()):
                message = receive(r)
                if message is None:
                    continue
                del pending[r.rank]
                if isinstance(message, Died):
                    collected.dead.append(self._died(r))
                elif isinstance(message, RankError):
                    collected.errors.append(message)
                else:
                    collected.replies[r.rank] = message
                if isinstance(message, (Died, RankError)):
                    grace_end = min(grace_end, time.monotonic() + FAULT_GRACE_S)
        collected.silent = sorted(pending)
        return collected

    def _died(self, r: Rank) -> RankDied:
        return RankDied(
            rank=r.rank,
            pid=r.pid,
            exitcode=r.process.exitcode,
            in_sampler=bool(r.watch.in_sampler.value),
            last_frames=read_new(r.stack_file, 0),
            running=r.watch.rank.value,
        )

    def running_rank(self, rank: int) -> int:
        """The rank a silent process was running (a sampler process simulates them in turn)."""
        return next((r.watch.rank.value for r in self._ranks if r.rank == rank), rank)

    @property
    def _name(self) -> str:
        return "simulated" if self.simulated else f"w{self.world_size}"

    @property
    def where(self) -> str:
        if self.simulated:
            return "in the sampler process (simulated ranks, no process group)"
        return f"in a {self.backend} group of {self.world_size} ranks"

    def dump_stacks(self) -> dict[int, str]:
        """Every live rank's stack of every thread, written by faulthandler on SIGUSR1."""
        return dump_stacks(self._ranks)


def start_fork_servers_for(world_sizes: Iterable[int]) -> None:
    """Start the fork servers the ranks of groups of these sizes come from (one per position
    past the first, see ``RankPool._context``), without waiting: each is a fresh interpreter
    that imports torch, about 1 s of CPU, so they import while the in-process tests run,
    instead of one after another as the first group of each size starts (2 s at W=4)."""
    first = 0 if not hashes_as(0) else 1  # position 0 forks from this process where it hashes as position 0 does
    for position in range(first, max(world_sizes, default=1)):
        start_separate_fork_server(position, FORK_SERVER_PRELOAD)


class RankPools:
    """One pool per world size (and backend) for this process, started lazily, closed at session end."""

    def __init__(self, timeout_s: float, worker_modules: Sequence[str] = ()) -> None:
        self.timeout_s = timeout_s
        self.worker_modules = tuple(worker_modules)
        self._pools: dict[tuple[int, str], RankPool] = {}

    def choose(self, requested: str, world_size: int, cuda_devices: int) -> BackendChoice:
        """The backend of a group of ``world_size`` local ranks (``--backend``, the GPUs here)."""
        return choose_backend(requested, world_size, cuda_devices)

    def get(self, world_size: int, backend: str) -> RankPool:
        key = (world_size, backend)
        if key not in self._pools:
            self._pools[key] = self._new_pool(world_size, backend)
        return self._pools[key]

    def _new_pool(self, world_size: int, backend: str) -> RankPool:
        return RankPool(world_size, backend, self.timeout_s, worker_modules=self.worker_modules)

    def begin_test(self) -> None:
        for pool in self._pools.values():
            pool.begin_test()

    def close(self) -> None:
        for pool in self._pools.values():
            pool.close()
