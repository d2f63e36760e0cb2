"""Typed messages between the rank pool's controller and its rank processes.

Every message is a frozen dataclass sent over a ``multiprocessing`` pipe (pickled), so
each side matches on the type, never on the text of a string.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np

from .case import Case
from .contracts import Contract
from .reading import Reading

# ---- set-up and lifetime ------------------------------------------------------------


@dataclass(frozen=True)
class RankSetup:
    """What one rank process needs to join the group; handed over at spawn."""

    rank: int
    world_size: int
    backend: str
    init_file: str  # file:// rendezvous in the pool's private directory
    master_port: int  # for samplers that read torchrun's variables; rendezvous is the file
    stack_file: str  # faulthandler writes every thread's stack here on SIGUSR1
    controller_pid: int
    collective_timeout_s: float
    in_sampler: Any  # a shared byte, 1 while the rank is inside a call into the sampler


@dataclass(frozen=True)
class Ready:
    rank: int
    pid: int


@dataclass(frozen=True)
class Shutdown:
    """Leave the group and exit."""


# ---- requests -----------------------------------------------------------------------


class Build(str, Enum):
    """How a rank constructs its sampler."""

    GROUP = "num_replicas=None, rank=None (from the process group)"
    EXPLICIT = "num_replicas=W, rank=RANK"
    SINGLE = "num_replicas=1, rank=0"
    DEFAULTS = "the dataset alone (every other parameter left to its default)"


@dataclass(frozen=True)
class ReadSamplers:
    """Build the sampler each way in ``builds`` and read it once per epoch.

    One sampler object per build lives across the epochs; before each epoch that is not
    None, ``set_epoch(epoch)`` is called, as a training loop does.
    """

    spec: str
    contract: Contract  # how to read the sampler: finite or a prefix, indices or batches
    case: Case
    epochs: tuple[int | None, ...]
    builds: tuple[Build, ...] = (Build.GROUP, Build.EXPLICIT, Build.SINGLE)


@dataclass(frozen=True)
class RunLoader:
    """Iterate a real DataLoader over the sampler (built from the group) once per epoch.

    After each epoch the ranks all-reduce their batch counts, so every rank learns every
    rank's count. ``with_sampler=False`` is the loader alone: every rank reads the whole
    dataset.
    """

    spec: str
    contract: Contract
    case: Case  # batch_size and the sampler's drop_last come from here
    epochs: tuple[int | None, ...]
    num_workers: int = 0
    loader_drop_last: bool = False
    with_sampler: bool = True


Request = ReadSamplers | RunLoader

# ---- replies ------------------------------------------------------------------------


@dataclass(frozen=True)
class SamplerReadings:
    rank: int
    readings: dict[Build, tuple[Reading, ...]]  # one Reading per epoch of the request
    has_set_epoch: bool = True  # False: the sampler has none, so it was never called


@dataclass(frozen=True)
class LoaderEpoch:
    sampler_indices: np.ndarray  # what iterating the sampler itself yields this epoch
    batches: tuple[np.ndarray, ...]  # what came out of the DataLoader
    loader_length: int  # len(DataLoader)
    batch_counts: tuple[int, ...]  # every rank's batch count, as the all-reduce delivered them here


@dataclass(frozen=True)
class LoaderReadings:
    rank: int
    epochs: tuple[LoaderEpoch, ...]
    has_set_epoch: bool = True  # False: the sampler has none, so it was never called


@dataclass(frozen=True)
class RankError:
    """The sampler (or the loader) raised inside a rank."""

    rank: int
    flag: str  # the invariant it breaks, or the generic sampler fault
    summary: str
    traceback: str
    epoch: int | None = None  # the epoch the rank was at, if set_epoch had been called
    sampler_frames: tuple[str, ...] = ()  # the evidence against the sampler; none: the suite's own error


Reply = SamplerReadings | LoaderReadings
