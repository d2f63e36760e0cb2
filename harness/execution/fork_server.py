"""multiprocessing's fork server, started by forking this process instead of a fresh interpreter.

The controller's ranks and each rank's DataLoader workers come from fork servers: a
single-threaded process that forks every child it is asked for, so no child inherits a
lock another thread held (a rank in a gloo group runs four more threads). multiprocessing
starts one as a new interpreter that imports its preload modules, which for torch costs
1.5 to 2 s of CPU: in the controller and in every rank that runs loader workers, eight
times in a default certification.

Forking the process itself gives the same server in about 30 ms, with everything it has
imported, as long as the process is still safe to fork: on its main thread, with no other
Python thread, and not yet in a torch.distributed group (gloo starts threads of its own).
Ranks therefore start theirs before joining the group. When that does not hold, or
multiprocessing's private forkserver interface is not the one this was written against,
multiprocessing starts the server its own way. Either way the caller gets the stock
"forkserver" context, and everything after the start (requests, the "alive" pipe that
stops the server when its parent exits) is multiprocessing's own.

Processes that must not share a parent's state, the ranks of one group (a fresh
interpreter each has its own hash seed), come from separate fork servers instead: one per
position in the group, each a fresh interpreter started once with torch imported
(``separate_fork_server_context``), with the hash seed of its position (``hash_seeds``). A group rebuilt after a fault then forks again
instead of importing torch in every rank again.
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import functools
import gc
import inspect
import io
import json
import multiprocessing
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterable, Sequence
from importlib import import_module
from multiprocessing import connection, forkserver, popen_forkserver, reduction, resource_tracker, spawn, util
from multiprocessing.context import BaseContext, ForkServerContext, ForkServerProcess, set_spawning_popen
from typing import Any

from .file_modules import is_loaded_from_file
from .hash_seeds import HASH_SEED_VARIABLE, derived_hash_seed, hash_seed_for

_PR_SET_PDEATHSIG = 1  # prctl(2)
# Separate fork servers an ancestor process shares with its descendants (share_separate_fork_servers).
SHARED_SERVERS_VARIABLE = "SAMPLER_CONFORMANCE_SHARED_FORK_SERVERS"

# forkserver.main's parameters in the Python versions this was checked against (3.10 to
# 3.14; 3.14 adds authkey_r, which may stay unset).
_MAIN_PARAMETERS = ("listener_fd", "alive_r", "preload", "main_path", "sys_path")


def fork_server_context(preload: Sequence[str]) -> BaseContext:
    """The "forkserver" context, its server running with ``preload`` imported (the
    modules that cannot be imported are skipped, as multiprocessing does)."""
    multiprocessing.set_forkserver_preload(list(preload))
    if _safe_to_fork():
        _start_by_fork(preload)
    return multiprocessing.get_context("forkserver")


def server_for_modules(modules: Iterable[str]) -> BaseContext | None:
    """A fork server whose children start with ``modules`` imported, where this process's own
    server (:func:`fork_server_context`) lacks some: a separate one, started once per such set,
    preloading them beside what the process's server did. None where the process's server
    has them all, or where what it has is not known (it was not started by forking), or where
    one of them was loaded from a file (only a fork carries that over).

    A rank forks its loader workers' server before it loads the spec, so a dataset whose
    module imports its library lazily (as the suite's adapters do) had every loader worker
    import that library again: transformers' ``IterableDatasetShard``, 7.5 minutes."""
    if _FORKED_WITH is None:
        return None
    modules = set(modules)
    missing = sorted(modules - _FORKED_WITH)
    if not missing or any(name not in sys.modules for name in missing) or any(map(is_loaded_from_file, modules)):
        return None
    return separate_fork_server_context(("modules", *missing), [*_FORKED_WITH_PRELOAD, *missing])


def leave_the_parent_server(parent_pid: int | None = None) -> None:
    """In a process a fork server started: die with the parent, then stop holding that server open.

    Every child inherits its server's "alive" pipe, and a server runs until the last holder
    closes it. So a child that dies with its parent would keep its server, and therefore
    itself, alive after the controller is gone: a rank hung in the sampler would outlive a
    controller stopped before it tore the pool down. Once the child lets go, the server
    exits with the controller, and the child with the server.

    The order matters. Holding the pipe, the child cannot outlive a server that has not yet
    exited, so the kernel is told to kill it with its parent (:func:`die_with_parent`) before
    it lets go. Letting go first, a loader worker could be the last holder: the server would
    exit at once, before torch's watchdog in the worker noted its parent's pid, and the
    watchdog would then watch init (seen: a killed rank's worker left running, under load).
    ``parent_pid``, where the process was started by another than a server: see
    :func:`die_with_parent`.
    """
    die_with_parent(parent_pid)
    server: Any = getattr(forkserver, "_forkserver", None)
    if server is None or server._forkserver_pid is not None:
        return  # a server this process started itself, not its parent's
    alive_fd = getattr(server, "_forkserver_alive_fd", None)
    if alive_fd is not None:
        os.close(alive_fd)
        server._forkserver_alive_fd = None


def die_with_parent(parent_pid: int | None) -> None:
    """On Linux, have the kernel SIGKILL this process when its parent dies, even by SIGKILL.

    ``parent_pid`` is the parent expected (a rank's controller), checked after the call in
    case it died before; ``None`` where the parent is the fork server that started this
    process, which cannot exit while this process holds its "alive" pipe."""
    if sys.platform != "linux":
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if parent_pid is not None and os.getppid() != parent_pid:  # it died before prctl took effect
        os._exit(1)


def separate_fork_server_context(key: object, preload: Sequence[str]) -> BaseContext | None:
    """A "forkserver" context whose server is this key's own: a fresh interpreter (its own
    hash seed) that imports ``preload``, started on first use and kept for this process's
    life. None where multiprocessing's private interface is not the known one (start a
    fresh interpreter per process instead)."""
    if _separate_server(key, preload) is None:
        return None
    context: Any = ForkServerContext()
    context.Process = functools.partial(_SeparatelyServedProcess, server_key=key)
    return context


def start_separate_fork_server(key: object, preload: Sequence[str]) -> None:
    """Start ``key``'s separate fork server now, without waiting for it: multiprocessing
    spawns it and returns, and the server imports ``preload`` while this process goes on;
    the first child asked of it waits only for what is left of that import."""
    server = _separate_server(key, preload)
    if server is not None:
        server.ensure_running()


def _separate_server(key: object, preload: Sequence[str]) -> Any | None:
    """``key``'s server, made (not started) on first use; None where multiprocessing's
    private interface is not the known one."""
    if not _interface_known():
        return None
    if key not in _SEPARATE_SERVERS:
        hash_seed = hash_seed_for(key) if isinstance(key, int) else None
        server = _shared_server(key, hash_seed, preload)
        if server is None:
            server = _SeededServer(hash_seed)
            server.set_forkserver_preload(list(preload))
        _SEPARATE_SERVERS[key] = server
    return _SEPARATE_SERVERS[key]


def share_separate_fork_servers(positions: Iterable[int], certification_seed: int, preload: Sequence[str]) -> str:
    """Start, in this process, the separate fork servers that a certification drawn from
    ``certification_seed`` starts for these group positions, and return the value of
    :data:`SHARED_SERVERS_VARIABLE` under which this process's descendants use them instead of
    starting their own (the selftests, which certify some 150 times, each run importing torch
    once a position: 1.4 s of CPU each). A descendant uses one only where its own certification
    would start the same server: same position, hash seed and preload. Empty where this
    interpreter's fork servers authenticate their clients (Python 3.14), which a descendant
    could not do without the key.

    What a shared server forks lives as long as the server, not as the certification that
    asked for it: a rank ends when its controller's pipe closes, or with the server, which
    ends with this process."""
    if not _interface_known() or "authkey_r" in inspect.signature(forkserver.main).parameters:
        return ""
    shared = {}
    for position in positions:
        hash_seed = derived_hash_seed(certification_seed, position)
        server = _SEPARATE_SERVERS.setdefault(("shared", position), _SeededServer(hash_seed))
        server.set_forkserver_preload(list(preload))
        server.ensure_running()
        shared[str(position)] = {
            "address": server._forkserver_address,
            "hash_seed": hash_seed,
            "preload": list(preload),
        }
    return json.dumps(shared)


def _shared_server(key: object, hash_seed: int | None, preload: Sequence[str]) -> Any | None:
    """The server an ancestor shares for ``key`` (:func:`share_separate_fork_servers`), if it
    is the one this process would start and still listens."""
    try:
        offered = json.loads(os.environ.get(SHARED_SERVERS_VARIABLE) or "{}").get(str(key))
    except (ValueError, AttributeError):
        return None
    if (
        hash_seed is None
        or not isinstance(offered, dict)
        or (offered.get("hash_seed"), offered.get("preload")) != (hash_seed, list(preload))
        or not os.path.exists(offered.get("address", ""))
    ):
        return None
    return _SharedServer(offered["address"])


class _SharedServer(forkserver.ForkServer):
    """A separate fork server an ancestor started and shares: this process only asks it for children."""

    def __init__(self, address: str) -> None:
        super().__init__()
        self._forkserver_address = address
        # Sent to every child as the server's "alive" pipe, which each lets go of as it starts
        # (leave_the_parent_server): this process holds no pipe of that server.
        self._forkserver_alive_fd = os.open(os.devnull, os.O_RDONLY)

    def ensure_running(self) -> None:
        pass  # its owner's to run


class _SeededServer(forkserver.ForkServer):
    """A fork server whose interpreter starts with ``hash_seed`` (``hash_seeds``), where one
    is given: every child it forks hashes strings alike, in every run of the same command."""

    def __init__(self, hash_seed: int | None) -> None:
        super().__init__()
        self.hash_seed = hash_seed

    def ensure_running(self) -> None:
        if self.hash_seed is None:
            return super().ensure_running()
        before = os.environ.get(HASH_SEED_VARIABLE)
        os.environ[HASH_SEED_VARIABLE] = str(self.hash_seed)  # the spawned interpreter's environment
        try:
            return super().ensure_running()
        finally:
            if before is None:
                del os.environ[HASH_SEED_VARIABLE]
            else:
                os.environ[HASH_SEED_VARIABLE] = before


def running_fork_servers() -> frozenset[int]:
    """The pids of the fork servers this process runs now, its own and the separate ones: what a
    run that starts in this process finds running, and leaves running (:func:`stop_fork_servers`)."""
    return frozenset(pid for _, pid in _servers_running())


def stop_fork_servers(keep: frozenset[int] = frozenset()) -> None:
    """Stop this process's fork servers now, and reap them: its own and the separate ones, but
    those whose pid is in ``keep``.

    Left alone, a server exits once its parent has exited and its "alive" pipe reads EOF; with
    torch loaded, its interpreter then takes seconds to shut down, so the servers outlived the
    command that started them, orphaned. Nothing of theirs needs a clean exit (they only fork),
    so they are killed. The next request starts them again.

    ``keep``: the servers that were running when a run started in this process
    (:func:`running_fork_servers`), which are not the run's to stop. A run inside another
    program's process (pytest's inline runs, the API) stopped that program's servers: the
    selftests' shared rank servers went that way, and nearly a hundred certifications after it
    each started their own, importing torch again."""
    stopping = [(server, pid) for server, pid in _servers_running() if pid not in keep]
    for key, server in list(_SEPARATE_SERVERS.items()):
        if getattr(server, "_forkserver_pid", None) not in keep:
            del _SEPARATE_SERVERS[key]
    for server, pid in stopping:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError, OSError):
            server._stop()  # closes the alive pipe, reaps the server, removes its socket


def _servers_running() -> list[tuple[Any, int]]:
    """(server, pid) of each fork server this process started: its own and the separate ones."""
    servers = [*_SEPARATE_SERVERS.values(), getattr(forkserver, "_forkserver", None)]
    running = []
    for server in servers:
        pid = getattr(server, "_forkserver_pid", None)
        if pid is not None and hasattr(server, "_stop"):
            running.append((server, pid))
    return running


_SEPARATE_SERVERS: dict[object, Any] = {}
# Every module this process had imported when it forked its fork server, and the preload it was
# asked for; None until it forks one (a server started the stock way imports only its preload).
_FORKED_WITH: frozenset[str] | None = None
_FORKED_WITH_PRELOAD: tuple[str, ...] = ()


class _SeparatelyServedProcess(ForkServerProcess):
    """A forkserver Process started by its key's server instead of multiprocessing's one."""

    def __init__(self, *args: Any, server_key: object, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._server_key = server_key

    @staticmethod
    def _Popen(process_obj: Any) -> Any:
        return _SeparatePopen(process_obj, _SEPARATE_SERVERS[process_obj._server_key])


class _SeparatePopen(popen_forkserver.Popen):
    def __init__(self, process_obj: Any, server: Any) -> None:
        self._server = server
        super().__init__(process_obj)

    def _launch(self, process_obj: Any) -> None:
        # popen_forkserver.Popen._launch, with this Popen's server where it asks the global one.
        prep_data = spawn.get_preparation_data(process_obj._name)
        buf = io.BytesIO()
        set_spawning_popen(self)
        try:
            reduction.dump(prep_data, buf)
            reduction.dump(process_obj, buf)
        finally:
            set_spawning_popen(None)
        self.sentinel, w = self._server.connect_to_new_process(self._fds)  # type: ignore[attr-defined]
        _parent_w = os.dup(w)  # the child's sentinel of its parent
        self.finalizer = util.Finalize(self, util.close_fds, (_parent_w, self.sentinel))  # type: ignore[attr-defined]
        with open(w, "wb", closefd=True) as f:
            f.write(buf.getbuffer())
        self.pid = forkserver.read_signed(self.sentinel)


def _safe_to_fork() -> bool:
    import torch.distributed as dist

    return (
        threading.current_thread() is threading.main_thread()
        and threading.active_count() == 1
        and not (dist.is_available() and dist.is_initialized())
        and _interface_known()
    )


def _interface_known() -> bool:
    server = getattr(forkserver, "_forkserver", None)
    parameters = tuple(inspect.signature(forkserver.main).parameters)
    return (
        server is not None
        and parameters[: len(_MAIN_PARAMETERS)] == _MAIN_PARAMETERS
        and set(parameters[len(_MAIN_PARAMETERS) :]) <= {"authkey_r"}
        and all(hasattr(server, name) for name in ("_lock", "_forkserver_pid", "_forkserver_address"))
        and hasattr(popen_forkserver.Popen, "_launch")
        and hasattr(forkserver, "read_signed")
    )


def _start_by_fork(preload: Sequence[str]) -> None:
    """What ForkServer.ensure_running does, with os.fork() where it spawns an interpreter."""
    server: Any = forkserver._forkserver  # its private state, which ensure_running reads
    with server._lock:
        if server._forkserver_pid is not None:
            return  # running (or, if it died, ensure_running restarts it the stock way)
        for name in preload:
            try:
                import_module(name)
            except ImportError:
                pass
        resource_tracker.ensure_running()
        # Copied into the server: every child it forks lets go of it as it starts, a loader's
        # worker too whose loader the suite did not build (no worker_init_fn of the suite's).
        util.register_after_fork(_CHILDREN_LET_GO, _let_go_as_a_child)
        with socket.socket(socket.AF_UNIX) as listener:
            address = connection.arbitrary_address("AF_UNIX")  # type: ignore[attr-defined]
            listener.bind(address)
            os.chmod(address, 0o600)
            listener.listen()
            # Every client holds the write end; the server exits when the last one closes it.
            alive_r, alive_w = os.pipe()
            pid = os.fork()
            if pid == 0:
                _serve(listener.fileno(), alive_r)
            os.close(alive_r)
        server._forkserver_address = address
        server._forkserver_alive_fd = alive_w
        server._forkserver_pid = pid
    global _FORKED_WITH, _FORKED_WITH_PRELOAD
    _FORKED_WITH, _FORKED_WITH_PRELOAD = frozenset(sys.modules), tuple(preload)


class _ChildrenLetGo:
    """The key of the after-fork hook below (multiprocessing keeps its hooks' keys weakly)."""


_CHILDREN_LET_GO = _ChildrenLetGo()


def _let_go_as_a_child(_: object) -> None:
    """multiprocessing's after-fork hook, run in every child as it starts: leave the server it
    came from (a no-op in a child of a process that started its own server)."""
    leave_the_parent_server()


def _let_go_of_the_parents_descriptors(keep: set[int]) -> None:
    """The parent's descriptors (pipes to its ranks, pytest's capture files) stay with the
    parent: a rank's pipe held open here would hide that rank's death. Each is pointed at
    /dev/null rather than closed. Python objects inherited from the parent still wrap those
    numbers (a logging handler on pytest's capture file), and a closed number is the next
    one a child's open() or shm_open() gets: their writes would land in that file. A
    library's "WARNING" once overwrote a DataLoader's epoch in shared memory that way."""
    listing = next((path for path in ("/proc/self/fd", "/dev/fd") if os.path.isdir(path)), None)
    if listing is None:  # no way to list them: close them, as an exec'd server starts without them
        bounds = sorted(keep)
        for low, high in zip(bounds, [*bounds[1:], os.sysconf("SC_OPEN_MAX")], strict=True):
            os.closerange(low + 1, high)
        return
    descriptors = [int(name) for name in os.listdir(listing)]
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        for fd in descriptors:
            if fd not in keep and fd != devnull:
                os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def _serve(listener_fd: int, alive_r: int) -> None:
    """The forked server: keep only what an exec'd server would have, then serve. Never returns."""
    try:
        faulthandler.disable()  # its file is one of the parent's descriptors; each child enables its own
        _let_go_of_the_parents_descriptors(keep={0, 1, 2, listener_fd, alive_r})
        # The parent's objects that wrap those descriptors must never be finalised here.
        gc.freeze()
        # Forked while the parent held it: unlocked here, or every child that starts a
        # fork server of its own (a rank, for its loader workers) would wait for it forever.
        server: Any = forkserver._forkserver
        server._lock = threading.Lock()
        forkserver.main(listener_fd, alive_r, [])
    finally:
        os._exit(0)
