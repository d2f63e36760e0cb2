"""Typed messages between a rank pool's controller and its processes.

Every message is a frozen dataclass sent over a ``multiprocessing`` pipe (pickled), so
each side matches on the type, never on the text of a string. The requests are the
scenarios of ``harness.scenarios``; each scenario module declares its own replies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .scenarios.steps import CallWatch

# ---- set-up and lifetime ------------------------------------------------------------


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


Reply = Any  # a scenario's reply (see its module), or Simulated
