"""Samplers that fault inside one rank of a real process group: raise, hang, die.

Each misbehaves only on rank 1 and only once a process group is initialised, so the
in-process suite never runs into them by accident.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any, Iterator

import torch.distributed as dist

from .parts import PartsSampler

FAULTY_RANK = 1
# HangsOnceOnRankOne hangs only while this file does not exist; it creates it first.
HANG_ONCE_FLAG_ENV = "SELFTEST_HANG_ONCE_FLAG"


def _faulty_here(sampler: PartsSampler) -> bool:
    return dist.is_available() and dist.is_initialized() and sampler.rank == FAULTY_RANK


def _hang() -> None:
    threading.Event().wait()  # blocks forever; only SIGKILL ends it


class RaisesOnRankOne(PartsSampler):
    def __iter__(self) -> Iterator[Any]:
        if _faulty_here(self):
            raise RuntimeError("rank 1 cannot read its shard (raised on purpose)")
        return super().__iter__()


class HangsOnRankOne(PartsSampler):
    def __iter__(self) -> Iterator[Any]:
        if _faulty_here(self):
            _hang()
        return super().__iter__()


class HangsOnceOnRankOne(PartsSampler):
    """Hangs the first time rank 1 iterates in a session (marked by a flag file), never again."""

    def __iter__(self) -> Iterator[Any]:
        flag = Path(os.environ[HANG_ONCE_FLAG_ENV])
        if _faulty_here(self) and not flag.exists():
            flag.touch()
            _hang()
        return super().__iter__()


class SkipsCollectiveOnRankOne(PartsSampler):
    """Every rank but rank 1 enters a barrier while iterating: they wait for it forever."""

    def __iter__(self) -> Iterator[Any]:
        if dist.is_available() and dist.is_initialized() and self.rank != FAULTY_RANK:
            dist.barrier()
        return super().__iter__()


class ExitsOnRankOne(PartsSampler):
    def __iter__(self) -> Iterator[Any]:
        if _faulty_here(self):
            os._exit(3)
        return super().__iter__()


class KilledOnRankOne(PartsSampler):
    def __iter__(self) -> Iterator[Any]:
        if _faulty_here(self):
            os.kill(os.getpid(), signal.SIGKILL)
        return super().__iter__()
