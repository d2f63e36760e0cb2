"""Reproduces [ranks agree on one global order] (agrees_across_ranks) of sampler_conformance.adapters.funasr:CustomDistributedBatchSampler
without the sampler conformance suite, as its test_set_epoch_reshuffles[keep_last-W2] found it.
Run: python agrees_across_ranks.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

import datetime
import functools
import importlib
import itertools
import os
import random
import shutil
import sys
import tempfile
import time
import traceback

import numpy
import torch

SPEC = sys.argv[1] if len(sys.argv) > 1 else 'sampler_conformance.adapters.funasr:CustomDistributedBatchSampler'  # or another sampler, to compare
N, W, EPOCH = 10, 2, 0
OPTIONS = {'shuffle': True, 'drop_last': False, 'batch_size': 1}
DATASET = range(N)  # as the suite's dataset: N items, item i is i
LIMIT = 104  # a rank that yields more indices than this never stops


def load(spec):
    """The sampler or factory MODULE:ATTR (or FILE.py:ATTR) names."""
    where, _, attr = spec.rpartition(":")
    if where.endswith(".py"):  # imported from its folder, as python FILE.py runs it
        sys.path.insert(0, os.path.dirname(os.path.abspath(where)))
        where = os.path.basename(where)[:-3]
    else:  # as python -m does: the module may lie in this folder
        sys.path.insert(0, os.getcwd())
    return functools.reduce(getattr, attr.split("."), importlib.import_module(where))


def length(sampler):
    return len(sampler) if hasattr(type(sampler), "__len__") else "no __len__"


def build(world, rank, epoch=EPOCH, **options):
    """One rank's sampler, as the suite built it (``options`` in place of OPTIONS' own)."""
    sampler = Sampler(DATASET, num_replicas=world, rank=rank, **{**OPTIONS, **options})
    if epoch is not None and callable(getattr(sampler, "set_epoch", None)):  # a guarded loop's call
        sampler.set_epoch(epoch)
    return sampler


B = OPTIONS["batch_size"]  # items a batch holds (the last may hold fewer)


def as_list(batch):
    """A tuple, or a 1-D tensor or array, as its items; any other batch as it is."""
    if getattr(batch, "ndim", None) == 1:
        return batch.tolist()
    return list(batch) if isinstance(batch, tuple) else batch


def take(sampler, count):
    """A pass's first ``count`` batches (fewer, where it ends first), each as a list."""
    return [as_list(batch) for batch in itertools.islice(sampler, count)]


def items_of(batches):
    """The batches' items, one after another."""
    return [i for batch in batches for i in batch]


def read(world, rank, sampler=None):
    """One rank's sampler (a new one, unless given), read once as the suite read it: len()
    before the pass, the pass, len() after."""
    sampler = build(world, rank) if sampler is None else sampler
    before = length(sampler)
    yielded = take(sampler, LIMIT + 1)
    return yielded, before, length(sampler)


def short(values):
    """A list, its middle left out where it is long."""
    values = list(values)
    if len(values) <= 16:
        return str(values)
    return f"{str(values[:12])[:-1]}, ... {len(values) - 16} more ..., {str(values[-4:])[1:]}"


Sampler = load(SPEC)  # here, and in every rank's process, which imports this file


def from_group(**options):
    """This rank's sampler built from the process group: num_replicas and rank left out."""
    return Sampler(DATASET, **{**OPTIONS, **options})


def one_pass(sampler, epoch=EPOCH):
    """set_epoch where the case has an epoch and the sampler a set_epoch, then one pass."""
    if epoch is not None and callable(getattr(sampler, "set_epoch", None)):
        sampler.set_epoch(epoch)
    return items_of(take(sampler, LIMIT + 1))


DRIFT_SEED = None  # every rank seeds its global RNGs with it, then rank 0 draws once more (None: not)


def read_in_group(world, rank):
    """This process's sampler built as the only rank (num_replicas=1, rank=0), read once: the
    global order this process computes."""
    if DRIFT_SEED is not None:
        torch.manual_seed(DRIFT_SEED)
        numpy.random.seed(DRIFT_SEED % 2**32)
        random.seed(DRIFT_SEED)
        if rank == 0:  # as dropout on a batch only this rank has: one more draw from each global RNG
            torch.rand(1), numpy.random.random(), random.random()
    return one_pass(build(1, 0))


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


if __name__ == "__main__":  # every rank's process imports this file: only the script itself reads the ranks
    ranks = run_ranks(W)
    print(f"{SPEC}: N={N}, epoch={EPOCH}, {OPTIONS}, built with num_replicas=1, rank=0 in each of the {W} "
          f"processes of a gloo group" + (f", global RNGs seeded with {DRIFT_SEED}, rank 0's drawn once more" if DRIFT_SEED is not None else ""))
    for r, indices in enumerate(ranks):
        print(f"rank {r}'s process: {short(indices)}")
    # The promise: built with the same arguments in every rank's process, the sampler computes the same order in each: the one global order the ranks' shares are cut from.
    apart = [r for r in range(1, W) if ranks[r] != ranks[0]]
    broken = bool(apart)
    shown = "; ".join(f"rank 0's process yields {short(ranks[0])}, rank {r}'s {short(ranks[r])}" for r in apart[:2])

    if broken:
        print("FAILED [ranks agree on one global order] built with num_replicas=1, rank=0 in each rank's process for the same (seed, epoch), rank 0 yields [4, 7, 3, 0, 6] but rank 1 yields [1, 5, 9, 8, 2] (position 0 is 4 in rank 0's and 1 in rank 1's): each process yielded fewer than the N=10 items asked for, and together they hold every index, so each read its own share of the group of 2: the sampler takes its rank and world size from the process group, not from the num_replicas and rank it is given")
        print(f"here: {shown}")
        sys.exit(1)
    print("held: built with the same arguments in every rank's process, the sampler computes the same order in each: the one global order the ranks' shares are cut from.")
