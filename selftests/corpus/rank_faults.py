"""Samplers that fault inside one rank of a real process group: raise, hang, die.

Each misbehaves only on rank 1 and only once a process group is initialised, so the
in-process suite never runs into them by accident.
"""

from __future__ import annotations

import os
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from multiprocessing import forkserver
from pathlib import Path
from typing import Any

import torch.distributed as dist

from .parts import PartsSampler
from .resumable import ResumableSampler

FAULTY_RANK = 1
# HangsOnceOnRankOne hangs only while this file does not exist; it creates it first.
HANG_ONCE_FLAG_ENV = "SELFTEST_HANG_ONCE_FLAG"
# LoaderWorkersCannotStart writes its files under this directory (default: the temporary one).
SCRATCH_ENV = "SELFTEST_SCRATCH"


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


class LoaderWorkersCannotStart(PartsSampler):
    """A correct sampler, in a rank whose DataLoader workers cannot start: the suite's (or
    the machine's) failure, never the sampler's.

    Built inside a rank of a group, it puts a sitecustomize that exits at once first on the
    PYTHONPATH of the rank's environment, and kills the rank's fork server for loader
    workers (harness.execution.fork_server), so that multiprocessing starts a new one as a fresh
    interpreter. That one dies before any worker starts, and the loader fails in the
    DataLoader's machinery with no frame of the sampler on the traceback, as when a
    machine's process limit stops the workers.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if dist.is_available() and dist.is_initialized():
            _break_new_interpreters()
            _kill_the_fork_server()


def _break_new_interpreters() -> None:
    directory = Path(os.environ.get(SCRATCH_ENV) or tempfile.gettempdir()) / f"no-workers-{os.getpid()}"
    directory.mkdir(exist_ok=True)
    (directory / "sitecustomize.py").write_text("import os\nos._exit(17)\n")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(directory), os.environ.get("PYTHONPATH")]))


def _kill_the_fork_server() -> None:
    """SIGKILL this process's fork server and wait (bounded) until it is dead, unreaped:
    multiprocessing reaps it on the next request and starts a new one."""
    pid = forkserver._forkserver._forkserver_pid  # type: ignore[attr-defined]
    if pid is None:
        return
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0] != "Z":
        time.sleep(0.01)


class ExitsOnRankTwo(PartsSampler):
    """Calls os._exit on rank 2 only: under torchrun, a worker's rank that is neither the
    controller's (0) nor the seed experiment's pair (0 and 1)."""

    def __iter__(self) -> Iterator[Any]:
        if dist.is_available() and dist.is_initialized() and self.rank == 2:
            os._exit(3)
        return super().__iter__()


class RefusesStateOnRankOne(ResumableSampler):
    """A resumable sampler whose ``load_state_dict`` raises on rank 1: under a
    ``StatefulDataLoader`` with workers it raises inside the loader's iterator, after the
    workers have started."""

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if _faulty_here(self):
            raise ValueError("rank 1 refuses every state (raised on purpose)")
        super().load_state_dict(state)
