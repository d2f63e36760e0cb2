"""Reproduces [the same items whatever num_workers] (same_items_any_workers) of sampler_conformance.adapters.accelerate:IterableDatasetShard
without the sampler conformance suite, as its test_same_items_any_workers[simulated] found it.
Run: python same_items_any_workers.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

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
N, W, EPOCH = 1, 1, 0
OPTIONS = {'seed': 0, 'shuffle': False, 'num_shards': 1, 'shards': (range(0, 1),), 'batch_size': 1}  # those the factory takes are given (workdir: a fresh folder the ranks share)
LOADER = {'num_workers': 0, 'batch_size': 1, 'drop_last': False}  # the DataLoader the suite put over each rank's dataset
LOADER_SEEDS = [8120217878112168370]  # each rank's DataLoader generator: its workers' seeds, as the suite drew them
STREAMS = W * max(LOADER["num_workers"], 1)  # the (rank, worker) pairs that read the data
LIMIT = 68  # a rank that yields more items than this never stops
OTHER_WORKERS = 2
OTHER_PERSISTENT = False
OTHER_SEEDS = [17024203870883339023]
EPOCHS = [0]


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
    print(f"{SPEC}: N={N}, W={W}, epochs {EPOCHS}, {OPTIONS}, DataLoader({LOADER})")
    first = [read(build(r), r, LOADER_SEEDS[r], EPOCHS) for r in range(W)]
    other = [
        read(build(r), r, OTHER_SEEDS[r], EPOCHS, num_workers=OTHER_WORKERS, persistent_workers=OTHER_PERSISTENT)
        for r in range(W)
    ]
    counted = []  # each epoch's items, all ranks together, counted: by the drawn workers, then by the others
    for k, epoch in enumerate(EPOCHS):
        a, b = (collections.Counter(i for ranks in (first, other)[j] for i in ids_of(ranks[k])) for j in (0, 1))
        print(f"epoch {epoch}: {sum(a.values())} items by {LOADER['num_workers']} workers, {sum(b.values())} by {OTHER_WORKERS}")
        counted.append((epoch, a, b, sorted(i for i in a.keys() | b.keys() if a[i] != b[i])))

    # The promise: each epoch's items, all ranks together, counted, are the same whatever the number of workers.
    epoch, a, b, differs = next((c for c in counted if c[3]), counted[0])
    broken = bool(differs)
    shown = f"epoch {epoch}, (id, count by {LOADER['num_workers']} workers, by {OTHER_WORKERS}): "
    shown += short((i, a[i], b[i]) for i in differs)

    if broken:
        print('FAILED [the same items whatever num_workers] read by num_workers=0, the epoch holds 1 item, id 0 counted 1x; read by num_workers=2, 2 items, id 0 counted 2x (1 ids counted differently): what the model trains and is evaluated on changes with a loader setting')
        print(f"here: {shown}")
        sys.exit(1)
    print("held: each epoch's items, all ranks together, counted, are the same whatever the number of workers.")
