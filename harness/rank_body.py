"""What runs inside one rank process of the pool.

:func:`main` joins the process group, then answers requests from the controller until
told to stop: it builds the sampler from the spec (taking ``num_replicas``/``rank``
from the group, or explicitly), reads it with :func:`harness.reading.read_indices`,
runs a real DataLoader over it, and sends back typed replies. Nothing is checked here:
the controller checks what every rank sent with the same checkers as ``properties/``.
"""

from __future__ import annotations

import ctypes
import faulthandler
import multiprocessing
import os
import signal
import socket
import sys
import traceback
from datetime import timedelta
from itertools import islice
from multiprocessing.connection import Connection
from typing import Any, Callable, TypeVar

import numpy as np
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader

from .backend import rank_device
from .blame import sampler_frames_in_traceback
from .contracts import Contract
from .dataset import IndexDataset
from .messages import (
    Build,
    LoaderEpoch,
    LoaderReadings,
    RankError,
    RankSetup,
    ReadSamplers,
    Ready,
    Reply,
    Request,
    RunLoader,
    SamplerReadings,
    Shutdown,
)
from .plug import SamplerPlug, load_plug
from .reading import BadIndex, Reading, read_limit, read_pass
from .runner import FAULT, has_set_epoch, raised

T = TypeVar("T")

_PR_SET_PDEATHSIG = 1


class StepFailed(Exception):
    """A call into the sampler or the loader raised; carries what the rank was doing."""

    def __init__(self, flag: str, summary: str, sampler_frames: tuple[str, ...]) -> None:
        super().__init__(summary)
        self.flag = flag
        self.summary = summary
        self.sampler_frames = sampler_frames


# The epoch the rank is at (for failure reports), and whether it is inside a call into the
# sampler: if the rank dies there, the death is the sampler's (see RankSetup.in_sampler).
_EPOCH: int | None = None
_IN_SAMPLER: Any = None


def main(setup: RankSetup, conn: Connection) -> None:
    """Entry point of a rank process (the target of the spawned Process)."""
    _die_with_controller(setup.controller_pid)
    # Its own process group: a terminal's Ctrl-C reaches only the controller, which
    # tears the pool down in order, and killpg() reaches this rank's loader workers too.
    os.setpgrp()
    _export_torchrun_environment(setup)
    stack_file = open(setup.stack_file, "w")  # kept open for the process's lifetime
    faulthandler.register(signal.SIGUSR1, file=stack_file, all_threads=True)
    faulthandler.enable(file=stack_file, all_threads=True)  # a segfault or abort leaves its stack too
    global _IN_SAMPLER
    _IN_SAMPLER = setup.in_sampler
    torch.set_num_threads(1)
    # The loader workers' forkserver (see _worker_start_method) imports these once, so that
    # each worker it forks starts with them loaded.
    multiprocessing.set_forkserver_preload(["torch", "harness.dataset"])
    try:
        if setup.backend == "nccl":
            torch.cuda.set_device(setup.rank)
        dist.init_process_group(
            backend=setup.backend,
            init_method=f"file://{setup.init_file}",
            rank=setup.rank,
            world_size=setup.world_size,
            timeout=timedelta(seconds=setup.collective_timeout_s),
        )
    except Exception as exc:
        summary = f"joining the {setup.backend} process group failed: {type(exc).__name__}: {exc}"
        conn.send(RankError(setup.rank, FAULT, summary, traceback.format_exc()))
        return
    conn.send(Ready(rank=setup.rank, pid=os.getpid()))
    plugs: dict[str, SamplerPlug] = {}
    try:
        while True:
            try:
                message = conn.recv()
            except EOFError:  # the controller is gone
                break
            if isinstance(message, Shutdown):
                break
            conn.send(answer(message, setup, plugs))
    finally:
        dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter finalisation: garbage-collecting torch takes seconds per rank on
    # 2 cores, and nothing is left to clean up.
    os._exit(0)


def answer(request: Request, setup: RankSetup, plugs: dict[str, SamplerPlug]) -> Reply | RankError:
    global _EPOCH
    _EPOCH = None  # no epoch set yet in this request
    try:
        if request.spec not in plugs:
            plugs[request.spec] = _step("loading the sampler", lambda: load_plug(request.spec))
        plug = plugs[request.spec]
        if isinstance(request, ReadSamplers):
            return read_samplers(request, setup, plug)
        if isinstance(request, RunLoader):
            return run_loader(request, setup, plug)
        raise TypeError(f"rank {setup.rank} got an unknown request {type(request).__name__}")
    except StepFailed as exc:
        return RankError(setup.rank, exc.flag, exc.summary, traceback.format_exc(), _EPOCH, exc.sampler_frames)
    except Exception as exc:  # the suite's own code failed: no sampler frames
        return RankError(setup.rank, FAULT, f"{type(exc).__name__}: {exc}", traceback.format_exc(), _EPOCH)


def read_samplers(request: ReadSamplers, setup: RankSetup, plug: SamplerPlug) -> SamplerReadings:
    case = request.case
    dataset = IndexDataset(case.dataset_size)
    options = case.sampler_options(yields_batches=request.contract.yields_batches)
    arguments = {
        Build.GROUP: (None, None),
        Build.EXPLICIT: (setup.world_size, setup.rank),
        Build.SINGLE: (1, 0),
        Build.DEFAULTS: (None, None),
    }
    global _EPOCH
    readings = {}
    sampler = None
    for build in request.builds:
        num_replicas, rank = arguments[build]
        given = {} if build is Build.DEFAULTS else options
        sampler = _step(
            f"in its constructor ({build.value})",
            lambda: plug.build(dataset, num_replicas, rank, **given),
        )
        per_epoch = []
        for epoch in request.epochs:
            _EPOCH = epoch
            _set_epoch(sampler, epoch)
            per_epoch.append(_read(sampler, request.contract, case.dataset_size, num_replicas or setup.world_size))
        readings[build] = tuple(per_epoch)
    _EPOCH = None
    return SamplerReadings(rank=setup.rank, readings=readings, has_set_epoch=has_set_epoch(sampler))


def run_loader(request: RunLoader, setup: RankSetup, plug: SamplerPlug) -> LoaderReadings:
    case = request.case
    dataset = IndexDataset(case.dataset_size)
    limit = read_limit(case.dataset_size)
    batched = request.contract.yields_batches
    sampler = None
    if request.with_sampler:
        options = case.sampler_options(yields_batches=batched)
        sampler = _step(
            f"in its constructor ({Build.GROUP.value})",
            lambda: plug.build(dataset, None, None, **options),
        )
    # A batch sampler goes in as batch_sampler=, with the batch size and drop_last it was built with.
    loader = DataLoader(
        dataset,
        **(
            dict(batch_sampler=sampler)
            if batched and sampler is not None
            else dict(batch_size=case.batch_size, sampler=sampler, drop_last=request.loader_drop_last)
        ),
        num_workers=request.num_workers,
        multiprocessing_context=_worker_start_method() if request.num_workers else None,
    )
    global _EPOCH
    epochs = []
    for epoch in request.epochs:
        _EPOCH = epoch
        _set_epoch(sampler, epoch)
        own = np.empty(0, dtype=np.int64)
        if sampler is not None:
            own = _read(sampler, request.contract, case.dataset_size, setup.world_size).indices
        batches = _step(
            f"while iterating DataLoader(num_workers={request.num_workers})",
            lambda: tuple(batch.numpy().astype(np.int64) for batch in islice(loader, limit + 1)),
        )
        epochs.append(
            LoaderEpoch(
                sampler_indices=own,
                batches=batches,
                loader_length=_step("in len(DataLoader)", lambda: len(loader)),
                batch_counts=_all_batch_counts(len(batches), setup),
            )
        )
    _EPOCH = None
    return LoaderReadings(rank=setup.rank, epochs=tuple(epochs), has_set_epoch=sampler is None or has_set_epoch(sampler))


def _read(sampler: Any, contract: Contract, dataset_size: int, world_size: int) -> Reading:
    return read_pass(sampler, contract, dataset_size, world_size, _step)


def _all_batch_counts(count: int, setup: RankSetup) -> tuple[int, ...]:
    """All-reduce (sum) of a one-hot vector: every rank learns every rank's batch count."""
    counts = torch.zeros(setup.world_size, dtype=torch.int64, device=rank_device(setup.backend, setup.rank))
    counts[setup.rank] = count
    dist.all_reduce(counts)
    return tuple(int(c) for c in counts.cpu().tolist())


def _set_epoch(sampler: Any, epoch: int | None) -> None:
    """As a guarded training loop does: a sampler without set_epoch is not called; the
    reply says so, and only the invariant that needs set_epoch counts it."""
    if sampler is None or epoch is None or not has_set_epoch(sampler):
        return
    _step(f"in set_epoch({epoch})", lambda: sampler.set_epoch(epoch))


def _step(what: str, call: Callable[[], T]) -> T:
    """One call into the sampler (or the loader that drives it), marked so that a death
    inside it is blamed on the sampler, and its exception turned into a StepFailed."""
    _IN_SAMPLER.value = 1
    try:
        return call()
    except BadIndex as exc:
        raise StepFailed("valid_indices", f"the sampler {exc}", ("(its items)",)) from exc
    except Exception as exc:
        frames = tuple(sampler_frames_in_traceback(exc.__traceback__))
        raise StepFailed(FAULT, raised(exc, what), frames) from exc
    finally:
        _IN_SAMPLER.value = 0


def _worker_start_method() -> str:
    """How loader workers start: forkserver where the platform has it, else spawn.

    Not fork. By the time a loader starts, a rank that joined a gloo group runs four more
    threads than its main one (measured: 1 + 4 after init_process_group), and a child
    forked from a multi-threaded process can deadlock on a lock another thread held at the
    fork (Python 3.12 warns about exactly this). Seen here: about one certification in six
    had a rank wait forever for a forked worker's first batch (README, "Real process
    groups"). The forkserver is a fresh single-threaded interpreter, started once per rank
    with torch imported, that forks each worker: what Python 3.14 makes the default on
    Linux, and as cheap per worker as fork once it runs.
    """
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def _export_torchrun_environment(setup: RankSetup) -> None:
    os.environ.update(
        RANK=str(setup.rank),
        LOCAL_RANK=str(setup.rank),
        WORLD_SIZE=str(setup.world_size),
        LOCAL_WORLD_SIZE=str(setup.world_size),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(setup.master_port),
        OMP_NUM_THREADS="1",
    )
    loopback = _loopback_interface()
    if loopback and "GLOO_SOCKET_IFNAME" not in os.environ:
        os.environ["GLOO_SOCKET_IFNAME"] = loopback  # gloo's pairs listen on loopback only


def _loopback_interface() -> str | None:
    try:
        names = [name for _, name in socket.if_nameindex()]
    except OSError:
        return None
    return next((name for name in names if name in ("lo", "lo0")), None)


def _die_with_controller(controller_pid: int) -> None:
    """On Linux, have the kernel SIGKILL this rank when the controller dies, even by SIGKILL."""
    if sys.platform != "linux":
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if os.getppid() != controller_pid:  # it died before prctl took effect
        os._exit(1)
