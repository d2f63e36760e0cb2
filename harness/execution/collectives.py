"""What a rank does with its peers and its loader workers, for every subject: the suite's own
all-reduce (marked, so that a rank left waiting there by a peer's fault is not blamed), an
epoch read with the ranks in lock step, and how DataLoader workers start."""

from __future__ import annotations

import io
import multiprocessing
import os
import pickle
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from multiprocessing.reduction import ForkingPickler
from types import FunctionType
from typing import Any, TypeVar

import torch
import torch.distributed as dist

from .backend import rank_device
from .file_modules import is_file_module
from .fork_server import fork_server_context, leave_the_parent_server, server_for_modules
from .scenario import RankContext, StepFailed

T = TypeVar("T")


def all_reduce_counts(rank: RankContext, count: int) -> tuple[int, ...]:
    """All-reduce (sum) of a one-hot vector: every rank learns every rank's count. On a mesh,
    every rank of the group joins it, as every rank of a job joins its step's collectives, and
    each data coordinate's count is its replica's first rank's (the others' are compared
    with it in their replies: ``harness.execution.mesh``)."""
    return _by_data_rank(rank, _all_reduce_group(rank, count))


def _all_reduce_group(rank: RankContext, count: int) -> tuple[int, ...]:
    """Every process's count, in the order of the group's ranks."""
    if rank.backend is None:
        raise RuntimeError("a simulated rank has no process group to all-reduce in")
    group_rank, group_size = (
        (rank.rank, rank.world_size) if rank.mesh is None else (rank.mesh.group_rank, rank.mesh.group_size)
    )
    # The rank body exports LOCAL_RANK as torchrun does: the GPU index on this rank's node.
    local_rank = int(os.environ.get("LOCAL_RANK", group_rank))
    counts = torch.zeros(group_size, dtype=torch.int64, device=rank_device(rank.backend, local_rank))
    counts[group_rank] = count
    rank.watch.in_collective.value = 1
    try:
        dist.all_reduce(counts)
    finally:
        rank.watch.in_collective.value = 0
    return tuple(int(c) for c in counts.cpu().tolist())


def _by_data_rank(rank: RankContext, group_counts: tuple[int, ...]) -> tuple[int, ...]:
    return group_counts if rank.mesh is None else tuple(group_counts[speaker] for speaker in rank.mesh.speakers)


def read_in_lockstep(
    rank: RankContext,
    start: Callable[[], Iterator[Any]],
    check: Callable[[Any], T],
    limit: int,
    never_stops: Callable[[], None],
    *,
    what: str,
    into_sampler: bool = True,
    read_on_after_bad: bool = False,
) -> tuple[tuple[T, ...], tuple[int, ...]]:
    """One epoch of a rank in a real group, the ranks in lock step, as a training loop's
    gradient all-reduce makes them: at each step every rank says whether it has a batch (an
    all-reduce), until none has. Returns the batches ``check`` made of what the iterator
    ``start()`` yielded, and every rank's batch count, so that a rank that ran out first is
    seen at the step it ran out.

    A rank whose iterator raises, or yields a batch ``check`` refuses, keeps stepping with
    the others and raises once none has a batch left: its peers are never left waiting in the
    all-reduce. After a refused batch it asks for no more, unless ``read_on_after_bad``
    (a DataLoader's workers left mid-epoch take seconds to shut down). More than ``limit``
    steps: ``never_stops`` raises what to say. ``into_sampler=False`` when ``start`` and the
    iterator are machinery driving the sampler (``RankContext.call``)."""
    batches: list[T] = []
    counts = [0] * rank.world_size
    failed: StepFailed | None = None
    iterator: Iterator[Any] | None = None
    try:
        iterator = rank.call(f"while starting {what}", start, into_sampler=into_sampler)
    except StepFailed as exc:
        failed = exc
    for step in range(limit + 1):
        batch = None
        if iterator is not None:
            try:
                batch = rank.call(
                    f"while reading batch {step} of {what}", partial(next, iterator, None), into_sampler=into_sampler
                )
            except StepFailed as exc:
                failed = exc
        if batch is not None and failed is None:
            try:
                batches.append(rank.call(f"in batch {step}", partial(check, batch)))
            except StepFailed as exc:
                failed = exc
                if not read_on_after_bad:
                    batch = None
        if batch is None:
            iterator = None  # never asked again once it ended, raised or was refused
        everyone = _all_reduce_group(rank, int(batch is not None))
        has = _by_data_rank(rank, everyone)
        if not any(everyone):  # on a mesh, a replica that reads on past its first rank is read to its end
            if failed is not None:
                raise failed
            return tuple(batches), tuple(counts)
        counts = [count + flag for count, flag in zip(counts, has, strict=True)]
    rank.call("while iterating", never_stops)
    raise AssertionError("unreachable")


def send_generators_by_value() -> None:
    """Have this process send a ``torch.Generator`` to a loader worker as its state's bytes.

    A DataLoader started by forkserver or spawn pickles each worker's copy of the dataset
    with multiprocessing's ForkingPickler, under which a ``torch.Generator`` travels as a
    tensor of its state in shared memory, by file descriptor. That tensor is a temporary of
    the generator's ``__reduce__``, freed before the worker is started, so the worker dies
    unpickling it (``RuntimeError: unable to resize file <filename not specified> to the
    right size``, torch 2.13). A dataset holding a generator, as accelerate's and
    transformers' ``IterableDatasetShard`` ask theirs to, loads fine under fork, Linux's
    default start method before Python 3.14; by value, the suite's workers get what fork
    gives them, an exact copy (docs/streaming-datasets.md)."""
    ForkingPickler.register(torch.Generator, _generator_by_value)


def _generator_by_value(generator: torch.Generator) -> tuple[Any, ...]:
    kind, arguments, (seed, offset, state) = generator.__reduce__()
    return _generator_from_bytes, (kind, arguments, seed, offset, state.numpy().tobytes())


def _generator_from_bytes(kind: Any, arguments: tuple[Any, ...], seed: int, offset: Any, state: bytes) -> Any:
    generator = kind(*arguments)
    generator.__setstate__((seed, offset, torch.frombuffer(bytearray(state), dtype=torch.uint8)))
    return generator


def loader_worker_options(num_workers: int, dataset: Any = None) -> dict[str, Any]:
    """How the suite's DataLoaders start their workers (``DataLoader(**options)``): from a fork
    server (:func:`worker_start_method`; for a ``dataset`` whose pickle names modules the
    rank's server had not imported, a server that has, ``fork_server.server_for_modules``),
    each worker set to die with that server and letting go of its "alive" pipe as it starts
    (:func:`release_fork_server`). A worker's parent is the fork server, not the rank, so
    torch's watchdog in the worker watches the server; and a server runs while any holder of
    its pipe lives. A worker that kept it would keep the server alive, and the server the
    worker, after the rank was killed (seen: a rank's server and two workers left running
    when the controller was killed). Let go, the server ends with the rank, and the workers
    with the server."""
    if not num_workers:
        return {}
    send_generators_by_value()
    context = server_for_modules(modules_pickled(dataset)) if dataset is not None else None
    return {"multiprocessing_context": context or worker_start_method(), "worker_init_fn": release_fork_server}


def modules_pickled(obj: Any) -> frozenset[str]:
    """The modules whose classes and functions a pickle of ``obj`` names: what a process must
    import to unpickle it. Empty where ``obj`` cannot be pickled (that is reported where the
    suite pickles it for its workers)."""
    recorder = _ModuleRecorder()
    try:
        recorder.dump(obj)
    except Exception:
        return frozenset()
    return frozenset(recorder.modules)


class _ModuleRecorder(pickle.Pickler):
    """A pickler that notes the module of every class and function it meets."""

    def __init__(self) -> None:
        super().__init__(io.BytesIO())
        self.modules: set[str] = set()

    def persistent_id(self, value: Any) -> None:  # asked of every object pickled
        named = value if isinstance(value, type | FunctionType) else type(value)
        self.modules.add(named.__module__)
        return None  # pickled as usual


def release_fork_server(worker_id: int) -> None:
    """A DataLoader's ``worker_init_fn``: die with the fork server that started the worker, and
    stop holding it open (``fork_server.leave_the_parent_server``)."""
    leave_the_parent_server()


def worker_start_method() -> str:
    """How loader workers start: forkserver where the platform has it, else spawn.

    Not fork. By the time a loader starts, a rank that joined a gloo group runs four more
    threads than its main one (measured: 1 + 4 after init_process_group), and a child
    forked from a multi-threaded process can deadlock on a lock another thread held at the
    fork (Python 3.12 warns about exactly this). Seen here: about one certification in six
    had a rank wait forever for a forked worker's first batch (docs/process-groups.md,
    "Loader workers start from a fork server"). The fork server is a single-threaded
    process with torch imported, forked from the rank before it joins the group
    (``harness.execution.fork_server``), that forks each worker: what Python 3.14 makes the default
    on Linux, and as cheap per worker as fork once it runs.
    """
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


@contextmanager
def default_start_from_fork_server(preload: Sequence[str]) -> Iterator[None]:
    """While it runs, the process's default start method is :func:`worker_start_method`'s,
    from this process's fork server (started now, with torch and ``preload`` imported, where
    none runs yet and the process is still safe to fork: a simulated rank's).

    For loaders the suite did not build (a data loader under test): they start their
    workers by the default, fork on Linux before Python 3.14, which can deadlock in a rank of
    a group (see :func:`worker_start_method`). A rank is killed with its process group, and
    the fork server and its workers with it (``processes.kill_rank``); each worker lets go of
    the server as it starts (``fork_server``'s after-fork hook, where the suite gives no
    ``worker_init_fn``), so a rank that dies with its controller leaves none behind."""
    fork_server_context(["torch", *[module for module in preload if not is_file_module(module)]])
    before = multiprocessing.get_start_method(allow_none=True)
    multiprocessing.set_start_method(worker_start_method(), force=True)
    try:
        yield
    finally:
        multiprocessing.set_start_method(before, force=True)
