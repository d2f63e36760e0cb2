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

import atexit
import multiprocessing
import os
import shutil
import signal
import socket
import tempfile
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from sampler_conformance.core.case import Case
from sampler_conformance.core.evidence import (
    FAULT,
    HarnessError,
    SamplerDeath,
    SamplerFault,
    SamplerHang,
    Violation,
    failure_text,
)

from . import rank_body
from .backend import BackendChoice, choose_backend
from .blame import sampler_frames_in_dump, with_source_lines
from .fork_server import fork_server_context, separate_fork_server_context
from .messages import RankDied, RankError, RankSetup, Reply, Shutdown, StoreRendezvous
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
STACK_DUMP_WAIT_S = 3.0
# The longest a controller's wait sleeps at a time. CPython runs signal handlers in the main
# thread, and only once it wakes: a Ctrl-C the kernel hands to one of torch's native threads
# would otherwise wait out the whole --rank-timeout (selftests' ctrl-c test, 60 s). Also how
# often a wait that can be called off (should_stop) asks whether it is.
POLL_S = 0.2
JOIN_TIMEOUT_S = 5.0
KILL_JOIN_TIMEOUT_S = 2.0
INDENT = "    "
# What the fork servers of ranks and of the sampler process have imported.
_FORK_SERVER_PRELOAD = ("torch", rank_body.__name__)


@dataclass
class _Rank:
    rank: int
    process: BaseProcess
    conn: Connection
    stack_file: Path
    watch: CallWatch

    @property
    def pid(self) -> int:
        return self.process.pid or -1


@dataclass
class Collected:
    """What the ranks did with one request (or with starting)."""

    replies: dict[int, Any]
    errors: list[RankError]
    dead: list[RankDied]
    silent: list[int]  # alive, but no answer before the deadline
    stacks: dict[int, str] = field(default_factory=dict)  # of the silent ranks, when read where they ran

    @property
    def failed(self) -> bool:
        return bool(self.errors or self.dead or self.silent)


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
    ) -> None:
        if backend is None and world_size != 1:
            raise ValueError("a pool without a process group is one process, which simulates the ranks")
        self.world_size = world_size
        self.backend = backend
        self.timeout_s = timeout_s
        # The ranks this process runs: all of them, or (under torchrun) its own one.
        self.local_ranks = tuple(range(world_size) if local_ranks is None else local_ranks)
        self.rendezvous = rendezvous  # None: a private file; else torchrun's store, under its prefix
        self.hosts: dict[int, str] = {}  # rank -> host, named in failures when ranks run on several hosts
        self._ranks: list[_Rank] = []
        self._directory: Path | None = None
        self._port_holder: socket.socket | None = None
        self.starts = 0  # how many times the group was (re)built
        # A rank died or hung on this case: later cases of the same test are not run.
        self._fault_case: Case | None = None
        # Per sampler spec, the cases it hung on. Each hang costs a --rank-timeout; after
        # HANGS_PER_SESSION of them, its later cases fail at once, in every test.
        self._hangs: dict[str, list[Case]] = {}
        _LIVE_POOLS.add(self)

    @classmethod
    def simulator(cls, timeout_s: float) -> RankPool:
        """The in-process runner's sampler process."""
        return cls(1, None, timeout_s)

    @property
    def simulated(self) -> bool:
        return self.backend is None

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
            failure = self._failure(None, collected, "starting")
            self.close(graceful=False)
            raise failure

    def launch(self, should_stop: Callable[[], bool] | None = None) -> Collected:
        """Start this process's ranks and wait (bounded) until each has joined the group."""
        self._directory = Path(tempfile.mkdtemp(prefix=f"rank-pool-{self._name}-"))
        if not self.simulated and self.rendezvous is None:
            self._port_holder = _reserve_loopback_port()
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
            )
            ours, theirs = context.Pipe(duplex=True)
            process = context.Process(
                target=rank_body.main, args=(setup, theirs), name=f"rank-{rank}-of-{self.world_size}"
            )
            process.start()
            theirs.close()
            self._ranks.append(_Rank(rank, process, ours, Path(setup.stack_file), setup.watch))
        return self._collect(max(self.timeout_s, MIN_START_TIMEOUT_S), follow_calls=False, should_stop=should_stop)

    def _context(self, position: int) -> Any:
        """Where the ``position``-th of this process's ranks starts from. The sampler process,
        and the first rank of each group, fork from this process's fork server; every other
        position forks from a fork server of its own, a fresh interpreter with its own hash
        seed, as under torchrun. No two ranks of a group may come from one parent: they would
        share its hash seed and unseeded RNG state, and a shuffle keyed on hash() of a str
        (HashSeededShuffle) would agree across them and pass. Each server imports torch once,
        so a group rebuilt after a fault forks again in milliseconds."""
        if self.simulated or position == 0:
            return _fork_server()
        separate = separate_fork_server_context(position, _FORK_SERVER_PRELOAD)
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
            _kill_rank(r)
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

    def request(self, request: Scenario) -> list[Reply]:
        """Send ``request`` to every rank; return the replies in rank order (simulated
        ranks: the sampler process's replies for each).

        Raises :class:`SamplerFault` when a rank raised (or the sampler process died: it
        restarts in milliseconds, so Hypothesis may go on shrinking), and
        :class:`SamplerHang` when a rank of a group died or any did not answer in time,
        with the sampler's frames as evidence. A fault with no sampler frame anywhere is
        the suite's: the request is tried once more on fresh processes, then
        :class:`HarnessError` is raised.
        """
        __tracebackhide__ = True  # failures point at the sampler, not the harness
        try:
            return self._request_once(request)
        except HarnessError as first:
            self.close(graceful=False)
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
                        f"{len(hangs) - 1} more {self._where}; later cases there are not run, so that a "
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
                        f"{self._where}; later cases of this test are not run, so that "
                        f"a hang costs one --rank-timeout (a dead rank one restart), not one per example",
                    )
                ],
                case,
            )
        collected = self._exchange(request)
        if collected.failed:
            # Ranks that all answered, some with an error, are back in their loop: keep them.
            keep = not (collected.dead or collected.silent)
            failure = self._failure(case, collected, f"running {type(request).__name__}")
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
                message = _receive(r)
                if message is None:
                    continue
                del pending[r.rank]
                if isinstance(message, _Died):
                    collected.dead.append(self._died(r))
                elif isinstance(message, RankError):
                    collected.errors.append(message)
                else:
                    collected.replies[r.rank] = message
                if isinstance(message, (_Died, RankError)):
                    grace_end = min(grace_end, time.monotonic() + FAULT_GRACE_S)
        collected.silent = sorted(pending)
        return collected

    def _died(self, r: _Rank) -> RankDied:
        return RankDied(
            rank=r.rank,
            pid=r.pid,
            exitcode=r.process.exitcode,
            in_sampler=bool(r.watch.in_sampler.value),
            last_frames=_read_new(r.stack_file, 0),
            running=r.watch.rank.value,
        )

    def running_rank(self, rank: int) -> int:
        """The rank a silent process was running (a sampler process simulates them in turn)."""
        return next((r.watch.rank.value for r in self._ranks if r.rank == rank), rank)

    def _failure(self, case: Case | None, collected: Collected, doing: str) -> BaseException:
        """The exception for what went wrong: the sampler's fault when some rank's stack or
        traceback shows the sampler's code (or a rank died inside a call into it), else the
        suite's own error."""
        violations = [
            _error_violation(error, self._named(error.rank)) for error in sorted(collected.errors, key=lambda e: e.rank)
        ]
        evidence = any(error.sampler_frames for error in collected.errors)
        for died in sorted(collected.dead, key=lambda d: d.rank):
            died_in_sampler = died.in_sampler or bool(sampler_frames_in_dump(died.last_frames))
            evidence = evidence or died_in_sampler
            violations.append(_death_violation(died, died_in_sampler, self.simulated, self.hosts.get(died.rank)))
        epochs = {error.epoch for error in collected.errors} - {None}
        at = case.with_(epoch=epochs.pop()) if case is not None and len(epochs) == 1 else case
        context = f"\n  while {doing} {self._where}"
        # A rank that raised or died is the fault, whatever its peers were doing: those still
        # silent wait for it (in a collective it never joins), a consequence and no hang.
        hung = bool(collected.silent) and not violations
        if collected.silent and violations:
            context += (
                f"\n  rank(s) {collected.silent} then waited for it, in a collective it never joined: a "
                f"consequence of the fault above, not a fault of their own; the group was restarted"
            )
        if hung:
            stacks = collected.stacks or self.dump_stacks()
            evidence = any(sampler_frames_in_dump(text) for text in stacks.values())
            violations.append(
                _hang_violation(
                    collected,
                    stacks,
                    self.timeout_s,
                    self.simulated,
                    self.running_rank(collected.silent[0]),
                    self.hosts,
                )
            )
        if not evidence or case is None:
            return HarnessError(
                "the suite failed, not the sampler: no sampler code was on any rank's stack or traceback\n"
                + failure_text(violations, at, None)
                + context
            )
        # A hang cost a --rank-timeout, a dead rank of a group a group restart: no shrinking
        # through more of them. The sampler process restarts in milliseconds: a death there
        # may, and so may a raise (its group restarts if peers were left waiting, but a raise
        # is set aside like any other, and never shrunk outside its own test).
        if hung:
            return SamplerHang(violations, at, context=context)
        if collected.dead and not self.simulated:
            return SamplerDeath(violations, at, context=context)
        return SamplerFault(violations, at, context=context)

    def _named(self, rank: int) -> str:
        """``rank 2``, and where ranks run on several hosts, ``rank 2 on HOST``."""
        host = self.hosts.get(rank)
        return f"rank {rank}" + (f" on {host}" if host else "")

    @property
    def _name(self) -> str:
        return "simulated" if self.simulated else f"w{self.world_size}"

    @property
    def _where(self) -> str:
        if self.simulated:
            return "in the sampler process (simulated ranks, no process group)"
        return f"in a {self.backend} group of {self.world_size} ranks"

    def dump_stacks(self) -> dict[int, str]:
        """Every live rank's stack of every thread, written by faulthandler on SIGUSR1."""
        before = {r.rank: _size(r.stack_file) for r in self._ranks}
        signalled = []
        for r in self._ranks:
            if r.process.is_alive():
                try:
                    os.kill(r.pid, signal.SIGUSR1)
                    signalled.append(r)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + STACK_DUMP_WAIT_S
        sizes: dict[int, int] = {}
        while time.monotonic() < deadline:
            time.sleep(0.05)
            now = {r.rank: _size(r.stack_file) for r in signalled}
            # faulthandler writes a dump in one burst: done once every file grew and then held still.
            if all(now[k] > before[k] for k in now) and now == sizes:
                break
            sizes = now
        stacks = {}
        for r in self._ranks:
            text = _read_new(r.stack_file, before[r.rank])
            stacks[r.rank] = text or ("(process gone)" if not r.process.is_alive() else "(no stack written)")
        return stacks


class RankPools:
    """One pool per world size (and backend) for this process, started lazily, closed at session end."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
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
        return RankPool(world_size, backend, self.timeout_s)

    def begin_test(self) -> None:
        for pool in self._pools.values():
            pool.begin_test()

    def close(self) -> None:
        for pool in self._pools.values():
            pool.close()


class _Died:
    """Marker: the rank's process ended (or its pipe broke) before it answered."""


def _receive(r: _Rank) -> object | None:
    """The rank's message if one is ready, _Died if the rank is gone, else None."""
    try:
        if r.conn.poll():
            return r.conn.recv()
    except (EOFError, OSError):
        r.process.join(KILL_JOIN_TIMEOUT_S)
        return _Died()
    if not r.process.is_alive():
        return _Died()
    return None


def _error_violation(error: RankError, named: str) -> Violation:
    return Violation(
        error.flag, f"{named}: {error.summary}", f"  traceback in {named}:\n{_indented(error.traceback.rstrip())}"
    )


def _death_violation(died: RankDied, in_sampler: bool, simulated: bool, host: str | None) -> Violation:
    where = " inside a call into the sampler" if in_sampler else ""
    last_frames = died.last_frames
    stack = f"  its last stack (faulthandler):\n{_indented(with_source_lines(last_frames))}" if last_frames else ""
    on = f" on {host}" if host else ""
    who = (
        f"the sampler process (pid {died.pid}), running simulated rank {died.running},"
        if simulated
        else f"rank {died.rank} (pid {died.pid}{on})"
    )
    return Violation(FAULT, f"{who} died{where}: {describe_exit(died.exitcode)}", stack)


def describe_exit(exitcode: int | None) -> str:
    if exitcode is None:
        return "its pipe closed but the process has not exited"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"killed by signal {name} (exit code {exitcode})"
    return f"exited with code {exitcode}"


def _hang_violation(
    collected: Collected, stacks: dict[int, str], timeout_s: float, simulated: bool, running: int, hosts: dict[int, str]
) -> Violation:
    silent = collected.silent
    on = f" (on {', '.join(sorted({hosts[rank] for rank in silent if rank in hosts}))})" if hosts else ""
    if simulated:
        headline = (
            f"simulated rank {running} did not finish within {timeout_s:g} s (--rank-timeout) of its last call "
            f"into the sampler; it hangs"
        )
    else:
        answered = sorted(collected.replies)
        headline = (
            f"rank(s) {silent}{on} did not answer within {timeout_s:g} s (--rank-timeout) of their last call "
            f"into the sampler; they hang" + (f"; rank(s) {answered} answered" if answered else "")
        )

    def title(rank: int) -> str:
        if simulated:
            return "the sampler process"
        return f"rank {rank}" + (f" on {hosts[rank]}" if rank in hosts else "")

    dumps = "\n".join(
        f"  --- {title(rank)} ---\n" + _indented(with_source_lines(text)) for rank, text in sorted(stacks.items())
    )
    if simulated:
        whose = "Its"
    elif set(stacks) == set(silent) and collected.replies:  # under torchrun each worker dumps its own silent child
        whose = "The silent ranks'"
    else:
        whose = "Every rank's"
    return Violation(FAULT, f"{headline}. {whose} stack (faulthandler) below.", dumps)


def _indented(text: str) -> str:
    return "\n".join(INDENT + line for line in text.splitlines())


def _read_new(path: Path, offset: int) -> str:
    """What faulthandler wrote to ``path`` after ``offset``."""
    try:
        with open(path, "rb") as dump:
            dump.seek(offset)
            return dump.read().decode(errors="replace").strip()
    except FileNotFoundError:
        return ""


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _fork_server() -> Any:
    """A fork server with torch and the rank body imported: each process forked from it
    starts in milliseconds, so a sampler that kills it costs little. Single-threaded, and
    it never touches CUDA, so its children may join a gloo or NCCL group."""
    return fork_server_context(_FORK_SERVER_PRELOAD)


def _reserve_loopback_port() -> socket.socket:
    """A port on 127.0.0.1 held for the pool's life, exported as MASTER_PORT.

    Rendezvous goes through a file, so nothing listens on it; holding it bound keeps
    the number unique among pools running side by side (pytest -n).
    """
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(("127.0.0.1", 0))
    return holder


def _kill_rank(r: _Rank) -> None:
    """SIGKILL the rank and its process group (its DataLoader workers)."""
    if r.process.pid is None or r.process.exitcode is not None:
        return  # never started, or already reaped: its pid may belong to someone else now
    try:
        os.killpg(r.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    r.process.kill()


_LIVE_POOLS: weakref.WeakSet[RankPool] = weakref.WeakSet()


@atexit.register
def _close_all_pools() -> None:
    # Registered after multiprocessing's own exit hook, so it runs first: that hook
    # joins non-daemon children without a bound.
    for pool in list(_LIVE_POOLS):
        pool.close(graceful=False)
