"""The processes of a rank pool: where they fork from, the port a group holds, reading a
rank's messages and its stack file, killing and reaping, and closing every pool at exit."""

from __future__ import annotations

import atexit
import os
import signal
import socket
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any, Protocol

from . import rank_body
from .fork_server import fork_server_context, separate_fork_server_context
from .scenario import CallWatch

KILL_JOIN_TIMEOUT_S = 2.0
STACK_DUMP_WAIT_S = 3.0
# What the fork servers of ranks and of the sampler process have imported: with the
# subjects' registry (every kind's rank-side modules, 114 of them), which a rank started
# from a fresh server imported for its first request, each rank again.
FORK_SERVER_PRELOAD = ("torch", rank_body.__name__, f"{__package__.rpartition('.')[0]}.subjects")


@dataclass
class Rank:
    rank: int
    process: BaseProcess
    conn: Connection
    stack_file: Path
    watch: CallWatch

    @property
    def pid(self) -> int:
        return self.process.pid or -1


class Died:
    """Marker: the rank's process ended (or its pipe broke) before it answered."""


def receive(r: Rank) -> object | None:
    """The rank's message if one is ready, Died if the rank is gone, else None."""
    try:
        if r.conn.poll():
            return r.conn.recv()
    except (EOFError, OSError):
        r.process.join(KILL_JOIN_TIMEOUT_S)
        return Died()
    if not r.process.is_alive():
        return Died()
    return None


def read_new(path: Path, offset: int) -> str:
    """What faulthandler wrote to ``path`` after ``offset``."""
    try:
        with open(path, "rb") as dump:
            dump.seek(offset)
            return dump.read().decode(errors="replace").strip()
    except FileNotFoundError:
        return ""


def size_of(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def dump_stacks(ranks: Sequence[Rank]) -> dict[int, str]:
    """Every live rank's stack of every thread, written by faulthandler on SIGUSR1."""
    before = {r.rank: size_of(r.stack_file) for r in ranks}
    signalled = []
    for r in ranks:
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
        now = {r.rank: size_of(r.stack_file) for r in signalled}
        # faulthandler writes a dump in one burst: done once every file grew and then held still.
        if all(now[k] > before[k] for k in now) and now == sizes:
            break
        sizes = now
    stacks = {}
    for r in ranks:
        text = read_new(r.stack_file, before[r.rank])
        stacks[r.rank] = text or ("(process gone)" if not r.process.is_alive() else "(no stack written)")
    return stacks


def fork_server() -> Any:
    """A fork server with torch and the rank body imported: each process forked from it
    starts in milliseconds, so a sampler that kills it costs little. Single-threaded, and
    it never touches CUDA, so its children may join a gloo or NCCL group."""
    return fork_server_context(FORK_SERVER_PRELOAD)


def fork_server_for(fresh: bool) -> Any:
    """Where a child that runs the sampler's code forks from: :func:`fork_server`; or, ``fresh``,
    the separate server a fresh interpreter runs (the one the simulated ranks' sampler process
    shares where it can), for a process that imported a package and forgot it
    (``specs.forgot_a_package``): a fork of it imports the package again, which a package that
    registers itself with another one refuses (datasets' Arrow types: ArrowKeyError)."""
    if fresh:
        separate = separate_fork_server_context(0, FORK_SERVER_PRELOAD)
        if separate is not None:
            return separate
    return fork_server()


def reserve_loopback_port() -> socket.socket:
    """A port on 127.0.0.1 held for the pool's life, exported as MASTER_PORT.

    Rendezvous goes through a file, so nothing listens on it; holding it bound keeps
    the number unique among pools running side by side (pytest -n).
    """
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(("127.0.0.1", 0))
    return holder


def kill_rank(r: Rank) -> None:
    """SIGKILL the rank and its process group (its DataLoader workers)."""
    if r.process.pid is None or r.process.exitcode is not None:
        return  # never started, or already reaped: its pid may belong to someone else now
    try:
        os.killpg(r.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    r.process.kill()


class Closable(Protocol):
    def close(self, graceful: bool = True) -> None: ...


_LIVE_POOLS: weakref.WeakSet[Closable] = weakref.WeakSet()


def close_at_exit(pool: Closable) -> None:
    """Kill ``pool``'s processes at interpreter exit, if it is still alive then."""
    _LIVE_POOLS.add(pool)


@atexit.register
def _close_all_pools() -> None:
    # Registered after multiprocessing's own exit hook, so it runs first: that hook
    # joins non-daemon children without a bound.
    for pool in list(_LIVE_POOLS):
        pool.close(graceful=False)
