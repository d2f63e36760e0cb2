"""Reproduces [another seed, another order] (stream_seed_effective) of sampler_conformance.adapters.accelerate:IterableDatasetShard
without the sampler conformance suite, as its test_stream_seed_effective[simulated] found it.
Run: python stream_seed_effective.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

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
N, W, EPOCH = 10, 1, 0
OPTIONS = {'seed': 0, 'shuffle': True, 'num_shards': 1, 'shards': (range(0, 10),), 'batch_size': 1}  # those the factory takes are given (workdir: a fresh folder the ranks share)
LOADER = {'num_workers': 0, 'batch_size': 1, 'drop_last': False}  # the DataLoader the suite put over each rank's dataset
LOADER_SEEDS = [12157597943634657020]  # each rank's DataLoader generator: its workers' seeds, as the suite drew them
STREAMS = W * max(LOADER["num_workers"], 1)  # the (rank, worker) pairs that read the data
LIMIT = 104  # a rank that yields more items than this never stops
SEEDS = [0, 1, 2, 3, 4]
SEED_LOADER_SEEDS = [[12157597943634657020], [10827275660468061055], [3643980934116753148], [1181268691046694677], [12202396256060715223]]
MIN_COMPARABLE = 10


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
    print(f"{SPEC}: N={N}, W={W}, epoch={EPOCH}, {OPTIONS}, DataLoader({LOADER})")
    orders = []
    for seed, seeds in zip(SEEDS, SEED_LOADER_SEEDS):
        orders.append([i for r in range(W) for i in ids_of(read(build(r, seed=seed), r, seeds[r])[0])])
        print(f"seed {seed} (ranks concatenated): {short(orders[-1])}")

    # The promise: with shuffle=True, datasets built with the seeds [0, 1, 2, 3, 4] are not all in one order at the epoch read (ranks concatenated, 10 items or more).
    broken = len(orders[0]) >= MIN_COMPARABLE and all(order == orders[0] for order in orders)
    shown = f"seeds {SEEDS} all gave the order {short(orders[0])}"

    if broken:
        print('FAILED [another seed, another order] seeds 0, 1, 2, 3, 4 gave the same order at epoch 0 on every rank, with shuffle=True, read by num_workers=0: [4, 1, 7, 5, 3, 9, 0, 8, 6, 2] (ranks concatenated). The seed never reaches the order, so every run of the job shuffles alike')
        print(f"here: {shown}")
        sys.exit(1)
    print('held: with shuffle=True, datasets built with the seeds [0, 1, 2, 3, 4] are not all in one order at the epoch read (ranks concatenated, 10 items or more).')
