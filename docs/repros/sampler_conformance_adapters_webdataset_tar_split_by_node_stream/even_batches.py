"""Reproduces [every rank runs the same number of batches] (even_batches) of sampler_conformance.adapters.webdataset_tar:split_by_node
without the sampler conformance suite, as its test_even_batches[simulated] found it.
Run: python even_batches.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

import collections
import functools
import importlib
import inspect
import itertools
import os
import sys
import tempfile

import torch

SPEC = sys.argv[1] if len(sys.argv) > 1 else 'sampler_conformance.adapters.webdataset_tar:split_by_node'  # or another dataset factory, to compare
N, W, EPOCH = 4, 2, 0
OPTIONS = {'seed': 0, 'shuffle': False, 'num_shards': 3, 'shards': (range(0, 2), range(2, 3), range(3, 4)), 'batch_size': 1}  # those the factory takes are given (workdir: a fresh folder the ranks share)
LOADER = {'num_workers': 0, 'batch_size': 1, 'drop_last': False}  # the DataLoader the suite put over each rank's dataset
LOADER_SEEDS = [15851412888949701596, 8036606286638810914]  # each rank's DataLoader generator: its workers' seeds, as the suite drew them
STREAMS = W * max(LOADER["num_workers"], 1)  # the (rank, worker) pairs that read the data
LIMIT = 80  # a rank that yields more items than this never stops


def load(spec):
    """The sampler or factory MODULE:ATTR (or FILE.py:ATTR) names."""
    where, _, attr = spec.rpartition(":")
    if where.endswith(".py"):  # imported from its folder, as python FILE.py runs it
        sys.path.insert(0, os.path.dirname(os.path.abspath(where)))
        where = os.path.basename(where)[:-3]
    else:  # as python -m does: the module may lie in this folder
        sys.path.insert(0, os.getcwd())
    return functools.reduce(getattr, attr.split("."), importlib.import_module(where))


def item_id(item):
    """The id an item carries: the item itself, its "id", or its first element."""
    if isinstance(item, dict):
        item = item["id"]
    elif isinstance(item, (tuple, list)):
        item = item[0]
    return item.item() if isinstance(item, torch.Tensor) else int(item)


def taken(options):
    """Of ``options``, those the factory names (all of them, where it takes **kwargs)."""
    parameters = inspect.signature(Factory).parameters
    if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        return options
    return {name: value for name, value in options.items() if name in parameters}


def read(rank):
    """Rank ``rank``'s dataset, built and read through its DataLoader as the suite read it: its batches of ids."""
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(W))  # as torchrun exports them
    dataset = Factory(N, rank=rank, world_size=W, **taken({**OPTIONS, "workdir": WORKDIR}))
    if EPOCH is not None and callable(getattr(dataset, "set_epoch", None)):
        dataset.set_epoch(EPOCH)
    generator = torch.Generator().manual_seed(LOADER_SEEDS[rank])
    loader = torch.utils.data.DataLoader(dataset, collate_fn=list, generator=generator, **LOADER)
    batches, items = [], 0
    for batch in loader:
        batches.append([item_id(item) for item in batch])
        items += len(batch)
        if items > LIMIT:
            break
    return batches


def short(values):
    """A list, its middle left out where it is long."""
    values = list(values)
    if len(values) <= 16:
        return str(values)
    return f"{str(values[:12])[:-1]}, ... {len(values) - 16} more ..., {str(values[-4:])[1:]}"


if __name__ == "__main__":
    Factory = load(SPEC)
    WORKDIR = tempfile.mkdtemp(prefix="layout-")
    ranks = [read(r) for r in range(W)]
    print(f"{SPEC}: N={N}, W={W}, epoch={EPOCH}, {OPTIONS}, DataLoader({LOADER})")
    for r, batches in enumerate(ranks):
        ids = [i for batch in batches for i in batch]
        print(f"rank {r} ({len(batches)} batches, {len(ids)} items): {short(ids)}")
    counts = collections.Counter(i for batches in ranks for batch in batches for i in batch)
    missing = [i for i in range(N) if not counts[i]]
    repeated = sorted(i for i, n in counts.items() if n > 1)

    # The promise: N fills every rank's workers' batches exactly here, so every rank runs the same number of batches.
    broken = len({len(batches) for batches in ranks}) > 1
    shown = f"batches per rank: {[len(b) for b in ranks]}"

    if broken:
        print('FAILED [every rank runs the same number of batches] rank 1 ran out at step 1 while rank 0 still had batches until step 3 (read in turn, counted) (batches per rank: [3, 1]): the ranks with more batches wait in a collective the others never join, and DDP hangs')
        print(f"here: {shown}")
        sys.exit(1)
    print("held: N fills every rank's workers' batches exactly here, so every rank runs the same number of batches.")
