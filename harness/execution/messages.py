"""Typed messages between a rank pool's controller and its processes.

Every message is a frozen dataclass sent over a ``multiprocessing`` pipe (pickled), so
each side matches on the type, never on the text of a string. The requests are the
scenarios of ``harness.execution.scenario`` (each subject's, such as
``harness.subjects.index_sampler.scenarios``); each scenario module declares its own replies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .scenario import CallWatch

# ---- set-up and lifetime ------------------------------------------------------------


@dataclass(frozen=True)
class StoreRendezvous:
    """Under torchrun: the group meets in torchrun's c10d store (``MASTER_ADDR:MASTER_PORT``)
    under a prefix fresh for each (re)start, instead of a file; ``local_rank`` picks the GPU."""

    host: str
    port: int
    prefix: str
    local_rank: int
    local_world_size: int


@dataclass(frozen=True)
class RankSetup:
    """What one process of a pool needs; handed over at its start."""

    rank: int
    world_size: int
    backend: str | None  # None: no process group; the process simulates the ranks of each case in turn
    init_file: str  # file:// rendezvous in the pool's private directory
    master_port: int  # for samplers that read torchrun's variables; rendezvous is the file
    stack_file: str  # faulthandler writes every thread's stack here on SIGUSR1, and on a fatal signal
    controller_pid: int | None  # the parent to die with; None: started by a fork server
    collective_timeout_s: float
    watch: CallWatch  # shared: inside a call into the sampler?, since when, on which rank
    store: StoreRendezvous | None = None  # set: rendezvous in torchrun's store, not in init_file
    # Modules the rank's DataLoader workers start with imported (what the subject under test
    # names, as ``Plug.worker_modules``): a worker that must import them itself pays seconds.
    worker_modules: tuple[str, ...] = ()
    memory_budget: int | None = None  # bytes it may allocate above its start (execution.memory_budget)
    # The controller's environment as it started the rank, which the rank takes (rank_body.main).
    environ: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Ready:
    rank: int
    pid: int


@dataclass(frozen=True)
class Shutdown:
    """Leave the group and exit."""


# ---- replies ------------------------------------------------------------------------


@dataclass(frozen=True)
class Simulated:
    """The replies of every simulated rank, in rank order."""

    replies: tuple[Any, ...]


@dataclass(frozen=True)
class RankError:
    """The sampler (or the loader) raised inside a rank."""

    rank: int
    flag: str  # the invariant it breaks, or the generic sampler fault
    summary: str
    traceback: str
    epoch: int | None = None  # the epoch the rank was at, if set_epoch had been called
    sampler_frames: tuple[str, ...] = ()  # the evidence against the sampler; none: the suite's own error


@dataclass(frozen=True)
class RankDied:
    """A rank's process ended (or its pipe broke) before it answered: what the controller
    knows of it, read where the process ran."""

    rank: int
    pid: int
    exitcode: int | None
    in_sampler: bool  # it died inside a call into the sampler
    last_frames: str  # faulthandler's dump of a fatal signal, if any
    running: int  # the rank it was running (a sampler process runs simulated ranks in turn)
    host: str | None = None  # set under torchrun, where ranks run on several hosts


@dataclass(frozen=True)
class RankSilent:
    """A live rank that did not answer in time, with its stack of every thread (faulthandler)."""

    rank: int
    stack: str
    running: int
    host: str | None = None


Reply = Any  # a scenario's reply (see its module), or Simulated
