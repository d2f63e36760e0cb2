"""The link between rank 0 and the other torchrun workers: typed messages in torchrun's c10d store.

torchrun already runs a TCP key-value store for every job (``MASTER_ADDR:MASTER_PORT``,
on the host of the rendezvous), reachable from every worker on every node. So rank 0's
controller and the workers talk through it, under a prefix of their own per run and
restart, with no port of ours. Each message is a pickled frozen dataclass under its own
key, written once:

- ``hello/R``: worker R's host, pid and GPU, written at start;
- ``command/S``: rank 0's S-th command (run a scenario, close a group, finish), read by
  every worker in order;
- ``outcome/S/R``: what rank R did with command S; ``abort/S``: rank 0 calls command S
  off (the workers still busy report their rank silent, with its stack);
- ``beat/R``: a counter each side bumps while it waits, so that the other side can tell
  a slow rank from a lost one; ``finished``: how many workers took the last command.

Every read is a ``check`` or a ``wait`` with a timeout: nothing here blocks unbounded.
"""

from __future__ import annotations

import pickle
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import torch.distributed as dist

if TYPE_CHECKING:  # not imported at run time: rank 0 reads this before pytest starts
    from ..messages import RankDied, RankError, RankSilent
    from ..scenario import Scenario

STORE_TIMEOUT_S = 60.0  # connecting, and any single store operation
CONTROLLER = "controller"
# The name of rank 0's pytest plugin, through which conformance/conftest.py finds torchrun's ranks.
PLUGIN_NAME = "sampler-conformance-torchrun"
POLL_MIN_S = 0.0005
POLL_MAX_S = 0.01


# ---- messages ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Hello:
    rank: int
    host: str
    pid: int
    local_rank: int
    local_world_size: int
    has_gpu: bool  # a CUDA device numbered LOCAL_RANK


@dataclass(frozen=True)
class RunScenario:
    """Ranks below ``world_size`` run ``scenario`` in the group (world_size, backend, generation);
    a worker whose group is of another generation (or has none) starts a fresh one first."""

    world_size: int
    backend: str
    generation: int
    timeout_s: float
    scenario: Scenario
    worker_modules: tuple[str, ...] = ()  # what the ranks' loader workers start with (RankPool's)


@dataclass(frozen=True)
class CloseGroup:
    world_size: int
    backend: str
    graceful: bool


@dataclass(frozen=True)
class Finish:
    """The run is over: close every group, and exit with ``exit_code`` (pytest's, on rank 0)."""

    exit_code: int


@dataclass(frozen=True)
class Outcome:
    """What one rank did with one RunScenario: exactly one of the four is set."""

    rank: int
    reply: Any = None
    error: RankError | None = None
    died: RankDied | None = None
    silent: RankSilent | None = None
    starting: bool = False  # it went wrong while the group was starting

    @property
    def failed(self) -> bool:
        return self.error is not None or self.died is not None or self.silent is not None


# ---- the store --------------------------------------------------------------------------


class Link:
    """One connection to torchrun's store (one per thread: clients are not shared)."""

    def __init__(self, host: str, port: int, prefix: str) -> None:
        client = dist.TCPStore(host, port, is_master=False, timeout=timedelta(seconds=STORE_TIMEOUT_S))
        self.store = dist.PrefixStore(prefix, client)
        self.address = (host, port, prefix)

    def clone(self) -> Link:
        return Link(*self.address)

    def put(self, key: str, message: object) -> None:
        self.store.set(key, pickle.dumps(message))  # type: ignore[arg-type]  # the store takes bytes too

    def has(self, key: str) -> bool:
        return self.store.check([key])

    def take(self, key: str) -> Any:
        """The message under ``key``; only after ``has(key)`` or ``wait_for(key)`` said it is there."""
        return pickle.loads(self.store.get(key))

    def wait_for(self, key: str, timeout_s: float) -> bool:
        """Whether ``key`` appeared within ``timeout_s``. Polled with ``check`` (the store's
        own timed ``wait`` logs a warning on every timeout), soon after activity, then
        backing off to POLL_MAX_S."""
        deadline = time.monotonic() + timeout_s
        pause = POLL_MIN_S
        while not self.has(key):
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(pause, left))
            pause = min(2 * pause, POLL_MAX_S)
        return True

    def wait_for_count(self, key: str, target: int, timeout_s: float) -> bool:
        """Whether the counter ``key`` reached ``target`` within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while self.count(key) < target:
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_MAX_S)
        return True

    def count(self, key: str, add: int = 0) -> int:
        return int(self.store.add(key, add))

    def beat(self, who: object) -> None:
        self.count(f"beat/{who}", 1)

    def beats(self, who: object) -> int:
        return self.count(f"beat/{who}")


class Pulse:
    """Tells a live peer from a lost one by its beat counter: lost once it stood still for ``silence_s``."""

    def __init__(self, link: Link, who: object, silence_s: float) -> None:
        self.link, self.who, self.silence_s = link, who, silence_s
        self.last = link.beats(who)
        self.changed = time.monotonic()

    def lost(self) -> bool:
        now_beats = self.link.beats(self.who)
        if now_beats != self.last:
            self.last, self.changed = now_beats, time.monotonic()
        return time.monotonic() - self.changed > self.silence_s


class Commands:
    """Rank 0's commands, numbered in the order every worker runs them."""

    def __init__(self, link: Link) -> None:
        self.link = link
        self.posted = 0

    def post(self, command: object) -> int:
        seq = self.posted
        self.link.put(command_key(seq), command)
        self.posted += 1
        return seq


def command_key(seq: int) -> str:
    return f"command/{seq}"


def outcome_key(seq: int, rank: int) -> str:
    return f"outcome/{seq}/{rank}"


def abort_key(seq: int) -> str:
    return f"abort/{seq}"


def hello_key(rank: int) -> str:
    return f"hello/{rank}"


FINISHED_KEY = "finished"
