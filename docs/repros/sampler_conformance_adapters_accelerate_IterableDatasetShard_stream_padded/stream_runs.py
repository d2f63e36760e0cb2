"""Reproduces [dataset fault] (stream_runs) of sampler_conformance.adapters.accelerate:IterableDatasetShard
without the sampler conformance suite, as its test_stream_runs[simulated] found it.
Run: python stream_runs.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

import functools
import importlib
import inspect
import itertools
import os
import sys
import tempfile
import traceback

import torch

SPEC = sys.argv[1] if len(sys.argv) > 1 else 'sampler_conformance.adapters.accelerate:IterableDatasetShard'  # or another dataset factory, to compare
N, W, EPOCH = 0, 1, None
OPTIONS = {'seed': 0, 'shuffle': False, 'num_shards': 1, 'shards': (range(0, 0),), 'batch_size': 1}  # those the factory takes are given (workdir: a fresh folder the ranks share)
LOADER = {'num_workers': 0, 'batch_size': 1, 'drop_last': False}  # the DataLoader the suite put over each rank's dataset
LOADER_SEEDS = [4670831959247021558]  # each rank's DataLoader generator: its workers' seeds, as the suite drew them
STREAMS = W * max(LOADER["num_workers"], 1)  # the (rank, worker) pairs that read the data
LIMIT = 64  # a rank that yields more items than this never stops


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
    print(f"{SPEC}: N={N}, W={W}, epoch={EPOCH}, {OPTIONS}, DataLoader({LOADER})")
    fault = ""
    for r in range(W):
        try:
            batches = read(r)
        except Exception as exc:  # the dataset's own: in the factory, set_epoch, or its workers' reading
            fault = f"rank {r}: {type(exc).__name__}: {exc}"
            traceback.print_exc(file=sys.stdout)
            break
        ids = [i for batch in batches for i in batch]
        print(f"rank {r} ({len(batches)} batches, {len(ids)} items): {short(ids)}")

    # The promise: every rank's dataset is built, set to its epoch and read through its DataLoader without raising.
    broken = bool(fault)
    shown = fault

    if broken:
        print("FAILED [dataset fault] rank 0: the dataset raised AttributeError while iterating: 'IterableDatasetShard' object has no attribute 'epoch'")
        print(f"here: {shown}")
        sys.exit(1)
    print("held: every rank's dataset is built, set to its epoch and read through its DataLoader without raising.")
