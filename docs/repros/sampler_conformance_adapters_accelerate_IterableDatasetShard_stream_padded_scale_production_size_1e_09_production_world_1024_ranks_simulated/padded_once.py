"""Reproduces [every item at least once, fewer than W x workers repeated] (padded_once) of sampler_conformance.adapters.accelerate:IterableDatasetShard
without the sampler conformance suite, as its test_stream_epoch[simulated-padded_once] found it.
Run: python padded_once.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

import collections
import functools
import importlib
import inspect
import itertools
import operator
import os
import sys
import tempfile

import torch

SPEC = sys.argv[1] if len(sys.argv) > 1 else 'sampler_conformance.adapters.accelerate:IterableDatasetShard'  # or another dataset factory, to compare
N, W, EPOCH = 174, 7, 2147483646
OPTIONS = {'seed': 1, 'shuffle': True, 'num_shards': 22, 'shards': (range(0, 8), range(8, 16), range(16, 24), range(24, 32), range(32, 40), range(40, 48), range(48, 56), range(56, 64), range(64, 72), range(72, 80), range(80, 88), range(88, 96), range(96, 104), range(104, 112), range(112, 120), range(120, 128), range(128, 136), range(136, 144), range(144, 152), range(152, 160), range(160, 167), range(167, 174)), 'batch_size': 8}  # those the factory takes are given (workdir: a fresh folder the ranks share)
LOADER = {'num_workers': 1, 'batch_size': 8, 'drop_last': False, 'persistent_workers': False}  # the DataLoader the suite put over each rank's dataset
LOADER_SEEDS = [15288576137375417002, 17395124798969910436, 11675337759008763591, 16001244504578338386, 11303011341709818842, 9258125495075961545, 17775074998474615292]  # each rank's DataLoader generator: its workers' seeds, as the suite drew them
STREAMS = W * max(LOADER["num_workers"], 1)  # the (rank, worker) pairs that read the data
LIMIT = 760  # a rank that yields more items than this never stops


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


if __name__ == "__main__":
    Factory = load(SPEC)
    WORKDIR = tempfile.mkdtemp(prefix="layout-")
    ranks = [epoch_of(r) for r in range(W)]
    print(f"{SPEC}: N={N}, W={W}, epoch={EPOCH}, {OPTIONS}, DataLoader({LOADER})")
    for r, batches in enumerate(ranks):
        print(f"rank {r} ({len(batches)} batches, {len(ids_of(batches))} items): {short(ids_of(batches))}")
    counts = collections.Counter(i for batches in ranks for i in ids_of(batches))
    missing = [i for i in range(N) if not counts[i]]
    repeated = sorted(i for i, n in counts.items() if n > 1)

    # The promise: every id is read, and fewer than W x workers = STREAMS items repeat others.
    repeats = sum(n - 1 for n in counts.values())
    broken = bool(missing) or repeats >= STREAMS
    shown = f"never read: {short(missing)}; {repeats} items repeat others, where fewer than {STREAMS} may"

    if broken:
        print("FAILED [every item at least once, fewer than W x workers repeated] 50 of the epoch's 224 items repeat others (id 0 2 times, by rank 2 worker 0, rank 3 worker 0), where fewer than W x workers = 7 x 1 = 7 make every rank's count equal: the repeated items weigh more in training and in evaluation")
        print(f"here: {shown}")
        sys.exit(1)
    print('held: every id is read, and fewer than W x workers = STREAMS items repeat others.')
