"""Reproduces [rank processes agree] (stream_agrees) of sampler_conformance.adapters.webdataset_tar:random_mix
without the sampler conformance suite, as its test_stream_agrees_across_processes[W2] found it.
Run: python stream_agrees.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

import atexit
import functools
import importlib
import inspect
import itertools
import json
import operator
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import numpy
import torch

SPEC = sys.argv[1] if len(sys.argv) > 1 else 'sampler_conformance.adapters.webdataset_tar:random_mix'  # or another dataset factory, to compare
N, W, EPOCH = 2, 2, 0
OPTIONS = {'seed': 0, 'shuffle': False, 'num_shards': 2, 'shards': (range(0, 1), range(1, 2)), 'batch_size': 1, 'sources': (range(0, 1), range(1, 2)), 'weights': (0.5, 0.5)}  # those the factory takes are given (workdir: a fresh folder the ranks share)
LOADER = {'num_workers': 0, 'batch_size': 1, 'drop_last': False}  # the DataLoader the suite put over each rank's dataset
LOADER_SEEDS = [12970719224969668694, 13517914264337379747]  # each rank's DataLoader generator: its workers' seeds, as the suite drew them
STREAMS = W * max(LOADER["num_workers"], 1)  # the (rank, worker) pairs that read the data
LIMIT = 72  # a rank that yields more items than this never stops
AS_RANK = 0
EPOCHS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]
HASH_SEEDS = [4108050210, 4108050211]


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


TIMEOUT_S = 60  # every wait is bounded: a process that reads longer than this hangs
RANK_OF_PROCESS = os.environ.get("REPRO_RANK_OF_PROCESS")  # set in the processes the script starts: the rank each reads


def start_processes(ranks):
    """Each of ``ranks`` read in a fresh interpreter, as torchrun starts a job's processes: this
    script started again with REPRO_RANK_OF_PROCESS set to the rank and PYTHONHASHSEED to its
    HASH_SEEDS, its reading on its last line (as JSON). A process that failed, hung or died is
    printed, and the script exits 2."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, sys.path))}  # they import as this one does
    children = {r: subprocess.Popen([sys.executable, __file__, SPEC], stdout=subprocess.PIPE, text=True, env={
        **env, "REPRO_RANK_OF_PROCESS": str(r), "PYTHONHASHSEED": str(HASH_SEEDS[r])}) for r in ranks}
    deadline = time.monotonic() + TIMEOUT_S
    readings, failed = {}, []
    try:
        for r, child in children.items():
            try:
                lines = child.communicate(timeout=max(0.1, deadline - time.monotonic()))[0].splitlines()
            except subprocess.TimeoutExpired:
                failed.append(f"rank {r}'s process hung: no reading within {TIMEOUT_S} s")
                continue
            if child.returncode or not lines:
                failed.append(f"rank {r}'s process exited {child.returncode} without a reading")
                continue
            readings[r] = json.loads(lines[-1])
    finally:
        for child in children.values():  # every process reaped, past the bound killed
            if child.poll() is None:
                child.kill()
            child.wait()
    for line in failed:
        print(line)
    if failed:
        sys.exit(2)
    return [readings[r] for r in ranks]


def in_process_of_rank(read):
    """In a process the script started: its global RNGs seeded with its hash seed (each process
    its own state, as a job's processes have theirs, fixed so that two runs print alike), then
    its rank's reading, read(rank), printed as JSON on its last line; and it exits."""
    rank = int(RANK_OF_PROCESS)
    random.seed(HASH_SEEDS[rank])
    numpy.random.seed(HASH_SEEDS[rank] % 2**32)
    torch.manual_seed(HASH_SEEDS[rank])
    print(json.dumps(read(rank), default=int))
    sys.exit(0)


def streams_of(rank):
    """Rank AS_RANK's dataset, built afresh in rank ``rank``'s process for each of EPOCHS and read
    there as the suite read it: its ids at each."""
    return [ids_of(read(build(AS_RANK), AS_RANK, LOADER_SEEDS[AS_RANK], [epoch])[0]) for epoch in EPOCHS]


if __name__ == "__main__":  # every rank's process imports this file: only the script itself reads the ranks
    if RANK_OF_PROCESS:  # a process the script started: its reading, and no more
        in_process_of_rank(streams_of)
    streams = start_processes(range(W))
    print(f"{SPEC}: N={N}, W={W}, {OPTIONS}, DataLoader({LOADER}): rank {AS_RANK}'s dataset built in {W} processes, "
          f"one a rank, at epochs {EPOCHS[0]} to {EPOCHS[-1]}")
    for r, epochs in enumerate(streams):
        differ = [e for e, mine, theirs in zip(EPOCHS, epochs, streams[0]) if mine != theirs]
        print(f"rank {r}'s process (PYTHONHASHSEED={HASH_SEEDS[r]}): epoch {EPOCHS[0]}: {short(epochs[0])}; "
              f"apart from rank 0's at {len(differ)} of {len(EPOCHS)} epochs")
    # The promise: rank 0's dataset, built for the same case in every rank's process, yields the same stream in each, at every epoch.
    apart = [(r, k) for r in range(1, W) for k in range(len(EPOCHS)) if streams[r][k] != streams[0][k]]
    broken = bool(apart)
    shown = "; ".join(f"epoch {EPOCHS[k]}: rank 0's process read {short(streams[0][k])}, rank {r}'s "
                      f"{short(streams[r][k])}" for r, k in apart[:2])

    if broken:
        print("FAILED [rank processes agree] the same rank's dataset, built for the same case in two processes, yields [0] in rank 0's process but [1, 0] in rank 1's (position 0 is 0 in rank 0's process and 1 in rank 1's): it depends on per-process state, so the ranks' parts of the data overlap and miss items")
        print(f"here: {shown}")
        sys.exit(1)
    print("held: rank 0's dataset, built for the same case in every rank's process, yields the same stream in each, at every epoch.")
