"""What runs inside one process of a rank pool.

:func:`main` joins the process group (unless it simulates ranks in-process), then answers
scenarios from the controller until told to stop. A rank of a real group runs each
scenario once, as its rank; the sampler process of the in-process runner runs it once per
simulated rank, in turn. Nothing is checked here: the controller checks what every rank
sent with the same checkers as ``properties/``.
"""

from __future__ import annotations

import faulthandler
import gc
import ipaddress
import multiprocessing
import os
import signal
import socket
import sys
import traceback
from datetime import timedelta
from multiprocessing.connection import Connection
from typing import Any

import torch
import torch.distributed as dist

from sampler_conformance.core.evidence import FAULT

from . import memory_budget
from .blame import readable_traceback
from .file_modules import is_file_module, preload_file_modules
from .fork_server import fork_server_context, leave_the_parent_server, stop_fork_servers
from .hash_seeds import HASH_SEED_VARIABLE
from .messages import RankError, RankSetup, Ready, Reply, Shutdown, Simulated
from .scenario import RankContext, Scenario, StepFailed

# How long a leftover loader worker gets to stop on SIGTERM before SIGKILL, and then to be reaped.
WORKER_STOP_S = 2.0


def main(setup: RankSetup, conn: Connection) -> None:
    """Entry point of a rank process (the target of the started Process)."""
    leave_the_parent_server(setup.controller_pid)
    _take_the_controllers_environment(setup.environ)
    memory_budget.apply(setup.memory_budget)
    # Its own process group: a terminal's Ctrl-C reaches only the controller, which
    # tears the pool down in order, and killpg() reaches this rank's loader workers too.
    os.setpgrp()
    stack_file = open(setup.stack_file, "w")  # kept open for the process's lifetime
    faulthandler.register(signal.SIGUSR1, file=stack_file, all_threads=True)
    faulthandler.enable(file=stack_file, all_threads=True)  # a segfault or abort leaves its stack too
    torch.set_num_threads(1)
    gc.freeze()  # what its server imported lives as long as the rank: out of the collector's full passes
    if setup.backend is not None:
        _export_torchrun_environment(setup)
        # The loader workers' fork server (see collectives.worker_start_method), forked
        # now, before the group's threads start. It has torch and what the subject's plug
        # names imported (Plug.worker_modules), so each worker it forks starts with them
        # loaded; what cannot be imported (torchdata, when not installed) is skipped.
        # A spec given as a file is loaded here, before the fork: the workers unpickle its classes.
        preload_file_modules(setup.worker_modules)
        fork_server_context(["torch", *[module for module in setup.worker_modules if not is_file_module(module)]])
        try:
            if setup.backend == "nccl":
                torch.cuda.set_device(setup.rank if setup.store is None else setup.store.local_rank)
            dist.init_process_group(
                backend=setup.backend,
                rank=setup.rank,
                world_size=setup.world_size,
                timeout=timedelta(seconds=setup.collective_timeout_s),
                **_rendezvous(setup),
            )
        except Exception as exc:
            summary = f"joining the {setup.backend} process group failed: {type(exc).__name__}: {exc}"
            conn.send(RankError(setup.rank, FAULT, summary, traceback.format_exc()))
            stop_fork_servers()
            return
    conn.send(Ready(rank=setup.rank, pid=os.getpid()))
    plugs: dict[str, Any] = {}
    try:
        while True:
            try:
                message = conn.recv()
            except EOFError:  # the controller is gone
                break
            if isinstance(message, Shutdown):
                break
            reply = answer(message, setup, plugs)
            stop_leftover_workers()
            conn.send(reply)
    finally:
        if setup.backend is not None:
            dist.destroy_process_group()
    # A loader whose iterator raised lives on in its traceback's reference cycle
    # (stop_leftover_workers): collected here, its queues' named semaphores are unlinked, where
    # os._exit would leave them to the resource tracker, which warns of them at the run's end
    # ("There appear to be 34 leaked semaphore objects", after the verdict).
    gc.collect()
    # Its loader workers' fork server, killed and reaped here: left to exit after the rank, it
    # would be a zombie until whatever adopts it reaps it (seen: one a rank, after the run ended).
    stop_fork_servers()
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter finalisation: tearing down torch's modules takes seconds per rank on
    # 2 cores, and nothing is left to clean up.
    os._exit(0)


def answer(scenario: Scenario, setup: RankSetup, plugs: dict[str, Any]) -> Reply | RankError:
    """Run ``scenario`` as this rank, or as each simulated rank in turn. What it tests is
    loaded by the scenario itself (:meth:`Scenario.load`), once per spec in this process."""
    # No plug yet: it is loaded next, in a bounded call.
    rank = RankContext(setup.rank, setup.world_size, None, setup.watch, setup.backend, noun=scenario.noun)
    try:
        if scenario.spec not in plugs:
            plugs[scenario.spec] = rank.call("while loading (importing its module)", scenario.load)
        plug = plugs[scenario.spec]
        if setup.backend is not None:
            rank.plug = plug
            return scenario.run(rank)
        replies = []
        for simulated in scenario.simulated_ranks():
            rank = RankContext(simulated, scenario.case.world_size, plug, setup.watch, noun=scenario.noun)
            replies.append(scenario.run(rank))
        return Simulated(tuple(replies))
    except StepFailed as exc:
        cause = exc.__cause__ or exc
        return RankError(exc.rank, exc.flag, exc.summary, readable_traceback(cause), rank.epoch, exc.sampler_frames)
    except Exception as exc:  # the suite's own code failed: no sampler frames
        return RankError(rank.rank, FAULT, f"{type(exc).__name__}: {exc}", traceback.format_exc(), rank.epoch)


def stop_leftover_workers() -> None:
    """Stop and reap the DataLoader workers a scenario left running (a rank's only children).

    A loader whose iterator raised while starting (a sampler's ``load_state_dict`` raising
    inside ``StatefulDataLoader``'s iterator, its workers already started) is only reachable
    from the traceback, and its workers run on until the garbage collector finds it. Its
    shutdown then waits ``MP_STATUS_CHECK_INTERVAL`` (5 s) for each worker, which never got
    its stop message: seen as 10 s at the start of a later example, in half of one test's
    examples (Megatron's sampler, which refuses a ``consumed_samples`` past the dataset)."""
    leftovers = multiprocessing.active_children()
    for worker in leftovers:
        worker.terminate()
    for worker in leftovers:
        worker.join(WORKER_STOP_S)
        if worker.is_alive():
            worker.kill()
            worker.join(WORKER_STOP_S)


def _rendezvous(setup: RankSetup) -> dict:
    """Where the group meets: the pool's private file, or (under torchrun) torchrun's c10d
    store under this (re)start's own prefix, so that a restarted group never meets the
    keys of the one before."""
    if setup.store is None:
        return {"init_method": f"file://{setup.init_file}"}
    client = dist.TCPStore(
        setup.store.host, setup.store.port, is_master=False, timeout=timedelta(seconds=setup.collective_timeout_s)
    )
    return {"store": dist.PrefixStore(setup.store.prefix, client)}


def _export_torchrun_environment(setup: RankSetup) -> None:
    store = setup.store
    os.environ.update(
        RANK=str(setup.rank),
        LOCAL_RANK=str(setup.rank if store is None else store.local_rank),
        WORLD_SIZE=str(setup.world_size),
        LOCAL_WORLD_SIZE=str(setup.world_size if store is None else store.local_world_size),
        MASTER_ADDR="127.0.0.1" if store is None else store.host,
        MASTER_PORT=str(setup.master_port),
        OMP_NUM_THREADS="1",
    )
    loopback = _loopback_interface()
    if loopback and "GLOO_SOCKET_IFNAME" not in os.environ and (store is None or _is_loopback(store.host)):
        os.environ["GLOO_SOCKET_IFNAME"] = loopback  # gloo's pairs listen on loopback only


def _is_loopback(host: str) -> bool:
    """Whether ``host`` (torchrun's MASTER_ADDR) is this machine's loopback: then every rank
    runs here, and gloo can stay on loopback too. Across hosts gloo picks the interface."""
    try:
        return ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
    except (OSError, ValueError):
        return False


def _loopback_interface() -> str | None:
    try:
        names = [name for _, name in socket.if_nameindex()]
    except OSError:
        return None
    return next((name for name in names if name in ("lo", "lo0")), None)


def _take_the_controllers_environment(environ: dict[str, str]) -> None:
    """Run in the controller's environment, as a process torchrun starts runs in the launcher's.

    A rank is forked from a server, which has the environment it started with: the controller's
    some time before, or, for a server shared by an ancestor (the selftests'), another process's.
    The rank keeps its own hash seed, its position's (``hash_seeds``), which the processes it
    starts from a fresh interpreter (loader workers, where there is no fork server) inherit."""
    if not environ:
        return
    hash_seed = os.environ.get(HASH_SEED_VARIABLE)
    os.environ.clear()
    os.environ.update(environ)
    os.environ.pop(HASH_SEED_VARIABLE, None)
    if hash_seed is not None:
        os.environ[HASH_SEED_VARIABLE] = hash_seed
