"""Reproduces [the ranks of one data-parallel replica read alike] (replicas_read_alike) of sampler_conformance.adapters.accelerate:PreparedStreamOnMesh
without the sampler conformance suite, as its test_no_starved_worker[mesh-drawn4] found it.
Run: python replicas_read_alike.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

import atexit
import datetime
import functools
import importlib
import inspect
import itertools
import operator
import os
import shutil
import sys
import tempfile
import time
import traceback

import torch

SPEC = sys.argv[1] if len(sys.argv) > 1 else 'sampler_conformance.adapters.accelerate:PreparedStreamOnMesh'  # or another dataset factory, to compare
N, W, EPOCH = 12, 2, 8
OPTIONS = {'seed': 1, 'shuffle': True, 'num_shards': 4, 'shards': (range(0, 2), range(2, 6), range(6, 10), range(10, 12)), 'batch_size': 6}  # those the factory takes are given (workdir: a fresh folder the ranks share)
LOADER = {'num_workers': 0, 'batch_size': 6, 'drop_last': False}  # the DataLoader the suite put over each rank's dataset
LOADER_SEEDS = [12574466853090644395, 7386544158884312554]  # each rank's DataLoader generator: its workers' seeds, as the suite drew them
STREAMS = W * max(LOADER["num_workers"], 1)  # the (rank, worker) pairs that read the data
LIMIT = 112  # a rank that yields more items than this never stops


def load(spec):
    """The sampler or factory MODULE:ATTR (or FILE.py:ATTR) names."""
    where, _, attr = spec.rpartition(":")
    if where.endswith(".py"):  # imported from its folder, as python FILE.py runs it
        sys.path.insert(0, os.path.dirname(os.path.abspath(where)))
        where = os.path.basename(where)[:-3]
    else:  # as python -m does: the module may lie in this folder
        sys.path.insert(0, os.getcwd())
    return functools.reduce(getattr, attr.split("."), importlib.import_module(where))


class NoId(TypeError):
    """An item without an id the suite can read."""


def item_id(item):
    """The id an item carries: an int (or a 0-d integer tensor), alone, under "id", or first in a tuple."""
    carrier = item["id"] if isinstance(item, dict) else item[0] if isinstance(item, (tuple, list)) else item
    try:
        if isinstance(carrier, bool):
            raise TypeError
        return operator.index(carrier)
    except TypeError:
        raise NoId(f"yielded a {type(carrier).__name__} {carrier!r} as an item's id (in {item!r})") from None


def collate(items):
    """A batch as the suite's DataLoader made it: the worker that read it (-1: the rank's own process), its items."""
    info = torch.utils.data.get_worker_info()
    return -1 if info is None else info.id, items


def taken(options):
    """Of ``options``, those the factory names (all of them, where it takes **kwargs)."""
    parameters = inspect.signature(Factory).parameters
    if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        return options
    return {name: value for name, value in options.items() if name in parameters}


def build(rank, **changes):
    """Rank ``rank``'s dataset, built as the suite built it (``changes`` in place of OPTIONS' own)."""
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(W))  # as torchrun exports them
    return Factory(N, rank=rank, world_size=W, **taken({**OPTIONS, "workdir": WORKDIR, **changes}))


def read(dataset, rank, loader_seed, epochs=(EPOCH,), **loader):
    """``dataset`` read through one DataLoader (``loader`` in place of LOADER's own), set_epoch(e)
    before each epoch e, as the suite read it: each epoch's batches, as (worker, ids)."""
    generator = torch.Generator().manual_seed(loader_seed)
    loader = torch.utils.data.DataLoader(dataset, collate_fn=collate, generator=generator, **{**LOADER, **loader})
    readings = []
    for epoch in epochs:
        if epoch is not None and callable(getattr(dataset, "set_epoch", None)):
            dataset.set_epoch(epoch)
        batches, items = [], 0
        for worker, batch in loader:
            batches.append((worker, [item_id(item) for item in batch]))
            items += len(batch)
            if items > LIMIT:
                break
        readings.append(batches)
    return readings


def epoch_of(rank, **changes):
    """Rank ``rank``'s dataset built and read for the epoch EPOCH as the suite did: its batches, as (worker, ids)."""
    return read(build(rank, **changes), rank, LOADER_SEEDS[rank])[0]


def ids_of(batches):
    return [i for _, batch in batches for i in batch]


def short(values):
    """A list, its middle left out where it is long."""
    values = list(values)
    if len(values) <= 16:
        return str(values)
    return f"{str(values[:12])[:-1]}, ... {len(values) - 16} more ..., {str(values[-4:])[1:]}"


Factory = load(SPEC)  # here, and in every rank's process, which imports this file
# The layout's folder, removed at exit: a rank's process forked from here shares it, a fresh interpreter makes its own.
WORKDIR = tempfile.mkdtemp(prefix="layout-")
atexit.register(shutil.rmtree, WORKDIR, ignore_errors=True)


TIMEOUT_S = 60  # every wait is bounded: a rank that reads longer than this hangs


def in_group(rank, world, folder, sending):
    """One rank's process: it joins the gloo group (a file rendezvous in ``folder``), reads
    its rank (read_in_group) and sends the reading back, or the traceback of what it raised."""
    # The platform's own start method for what the rank starts (its DataLoader's workers), as in a
    # rank torchrun starts, not one its parent set (a forkserver would import this file again).
    torch.multiprocessing.set_start_method(None, force=True)
    # What torchrun exports to each rank, as the suite's ranks have it: a library may read it (accelerate's state).
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world))
    try:
        torch.distributed.init_process_group("gloo", init_method=f"file://{folder}/rendezvous", rank=rank,
                                             world_size=world, timeout=datetime.timedelta(seconds=TIMEOUT_S))
    except Exception as exc:  # the group did not form (gloo's sockets, on a busy machine): started again
        sending.send(("could not join the group", f"{type(exc).__name__}: {exc}"))
        return
    try:
        sending.send(("read", read_in_group(world, rank)))
    except Exception as exc:  # the sampler's own, the parent prints it; or gloo's, in a group the reading made
        joined = "connectFullMesh" not in str(exc)  # a mesh's dimension that did not form: started again
        sending.send(("raised", traceback.format_exc()) if joined else ("could not join the group", str(exc)))
    finally:
        torch.distributed.destroy_process_group()


def start_group(world):
    """Each rank's (how, what): its reading, or how it failed; every process reaped, past the bound killed."""
    # Forked from this process on Linux, torch imported already (a fresh interpreter a rank costs 1.5 s
    # of importing); spawned elsewhere, where forking a process that imported torch is not safe.
    context = torch.multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
    folder = tempfile.mkdtemp()
    pipes = [context.Pipe(duplex=False) for _ in range(world)]
    processes = [context.Process(target=in_group, args=(r, world, folder, pipes[r][1])) for r in range(world)]
    replies = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        for process in processes:
            process.start()
        for _, sending in pipes:
            sending.close()  # the rank's end only: a rank that dies is an end of file here
        for r, (receiving, _) in enumerate(pipes):
            if not receiving.poll(max(0.0, deadline - time.monotonic())):
                replies.append(("hung", f"no reading within {TIMEOUT_S} s"))
                continue
            try:
                replies.append(receiving.recv())
            except EOFError:
                processes[r].join(5.0)
                replies.append(("died", f"its process ended without a reading (exit code {processes[r].exitcode})"))
    finally:
        for process in processes:
            if process.pid is not None:
                process.join(max(1.0, deadline - time.monotonic()))
                if process.is_alive():
                    process.kill()
                    process.join()
        shutil.rmtree(folder, ignore_errors=True)
    return replies


def run_ranks(world):
    """Every rank's reading, each rank a process of one gloo group on this machine (started
    again, twice at most, where it did not form). A rank that raised, hung or died is printed, and the
    script exits 2."""
    for _ in range(3):  # gloo's mesh fails to connect now and then on a busy machine: started again
        replies = start_group(world)
        if all(how != "could not join the group" for how, _ in replies):
            break
    failed = [(r, how, what) for r, (how, what) in enumerate(replies) if how != "read"]
    for r, how, what in failed:
        print(f"rank {r} {how}: {what}")
    if failed:
        sys.exit(2)
    return [what for _, what in replies]


MESH_SIZES, MESH_NAMES = (2, 2), ('tp', 'dp_replicate')  # the job's device mesh
DATA_RANKS = [0, 1, 0, 1]  # each global rank's data-parallel coordinate, in range(W)


def read_in_group(world, rank):
    """This rank's dataset on the mesh, built as the suite builds it there, read once through its
    DataLoader: given the mesh with the global rank where the factory takes one, else its data
    coordinate (RANK and WORLD_SIZE the global ones, as torchrun exports them); its batches, as (worker, ids)."""
    mesh = torch.distributed.device_mesh.init_device_mesh("cpu", MESH_SIZES, mesh_dim_names=MESH_NAMES)
    options = taken({**OPTIONS, "workdir": WORKDIR})
    if "device_mesh" in inspect.signature(Factory).parameters:
        dataset = Factory(N, rank=rank, world_size=world, device_mesh=mesh, **options)
    else:
        dataset = Factory(N, rank=DATA_RANKS[rank], world_size=W, **options)
    return read(dataset, DATA_RANKS[rank], LOADER_SEEDS[DATA_RANKS[rank]])[0]


if __name__ == "__main__":  # every rank's process imports this file: only the script itself reads the ranks
    ranks = run_ranks(len(DATA_RANKS))
    print(f"{SPEC}: N={N}, W={W} data-parallel ranks on the mesh {dict(zip(MESH_NAMES, MESH_SIZES))}, epoch={EPOCH}, "
          f"{OPTIONS}, DataLoader({LOADER}), in a gloo group of {len(DATA_RANKS)} processes")
    for r, batches in enumerate(ranks):
        print(f"rank {r} (data rank {DATA_RANKS[r]}): {short(batches)}")
    # The promise: the ranks of one data-parallel replica (one data coordinate of the mesh) read alike.
    replicas = {}
    for r, data_rank in enumerate(DATA_RANKS):
        replicas.setdefault(data_rank, []).append(r)
    wrong = [(d, rs[0], r) for d, rs in replicas.items() for r in rs[1:] if ranks[r] != ranks[rs[0]]]
    broken = bool(wrong)
    shown = "; ".join(f"replica {d}: rank {a} read {short(ranks[a])}, rank {b} read {short(ranks[b])}" for d, a, b in wrong[:2])

    if broken:
        print('FAILED [the ranks of one data-parallel replica read alike] the ranks of data-parallel replica 0 of the mesh tp2.dp_replicate2 read differently (ReadEpochs, epochs[0].batches[0].ids): rank 0 (tp=0, dp_replicate=0) read [3, 10, 0, 6, 9, 4], rank 2 (tp=1, dp_replicate=0) read [1, 7, 8, 2, 5, 11]')
        print(f"here: {shown}")
        sys.exit(1)
    print('held: the ranks of one data-parallel replica (one data coordinate of the mesh) read alike.')
