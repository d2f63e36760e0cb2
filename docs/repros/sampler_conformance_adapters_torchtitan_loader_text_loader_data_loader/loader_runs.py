"""Reproduces [data loader fault] (loader_runs) of sampler_conformance.adapters.torchtitan_loader:text_loader
without the sampler conformance suite, as its test_loader_runs[simulated] found it.
Run: python loader_runs.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

import functools
import importlib
import inspect
import itertools
import os
import sys
import tempfile
import traceback

SPEC = sys.argv[1] if len(sys.argv) > 1 else 'sampler_conformance.adapters.torchtitan_loader:text_loader'  # or another data loader factory, to compare
N, W, B, EPOCH = 1, 2, 2, None  # instances, DP ranks, global batch size, epoch
OPTIONS = {'seed': 0, 'num_workers': 0}  # those the factory takes are given, and a fresh workdir a rank
LIMIT = 68  # a rank that yields more batches than this never stops


def load(spec):
    """The sampler or factory MODULE:ATTR (or FILE.py:ATTR) names."""
    where, _, attr = spec.rpartition(":")
    if where.endswith(".py"):  # imported from its folder, as python FILE.py runs it
        sys.path.insert(0, os.path.dirname(os.path.abspath(where)))
        where = os.path.basename(where)[:-3]
    else:  # as python -m does: the module may lie in this folder
        sys.path.insert(0, os.getcwd())
    return functools.reduce(getattr, attr.split("."), importlib.import_module(where))


def taken(options):
    """Of ``options``, those the factory names (all of them, where it takes **kwargs)."""
    parameters = inspect.signature(Factory).parameters
    if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        return options
    return {name: value for name, value in options.items() if name in parameters}


def ids(batch):
    """The instance ids a batch carries: the batch itself, or its "index" or "ids" entry."""
    if isinstance(batch, dict):
        batch = next(batch[key] for key in ('index', 'ids') if key in batch)
    return [int(i) for i in (batch.tolist() if hasattr(batch, "tolist") else batch)]


def build(world, rank, workdir):
    """Rank ``rank``'s loader of DP size ``world``, as the suite built it."""
    return Factory(N, dp_rank=rank, dp_world_size=world, global_batch_size=B, **taken({**OPTIONS, "workdir": workdir}))


def hook_of(loader):
    """The loader's epoch hook, reshuffle(epoch) or set_epoch(epoch); None where it has neither."""
    return next((getattr(loader, name) for name in ('reshuffle', 'set_epoch') if callable(getattr(loader, name, None))), None)


def read_rank(world, rank, epochs):
    """Rank ``rank``'s loader of DP size ``world``, built afresh, its epoch hook called before
    each of ``epochs`` (None: not called): per epoch, its batches' ids."""
    with tempfile.TemporaryDirectory() as workdir:
        loader = build(world, rank, workdir)
        read = []
        for epoch in epochs:
            if epoch is not None and hook_of(loader) is not None:
                hook_of(loader)(epoch)
            read.append([ids(batch) for batch in itertools.islice(loader, LIMIT + 1)])
        return read


def short(values):
    """A list, its middle left out where it is long."""
    values = list(values)
    if len(values) <= 16:
        return str(values)
    return f"{str(values[:12])[:-1]}, ... {len(values) - 16} more ..., {str(values[-4:])[1:]}"


if __name__ == "__main__":
    Factory = load(SPEC)
    print(f"{SPEC}: N={N}, W={W}, global_batch_size={B}, epoch={EPOCH}, {OPTIONS}")
    fault = ""
    for r in range(W):
        try:
            (batches,) = read_rank(W, r, [EPOCH])
        except Exception as exc:  # the loader's own: in the factory, its epoch hook, or its reading
            fault = f"rank {r}: {type(exc).__name__}: {exc}"
            traceback.print_exc(file=sys.stdout)
            break
        print(f"rank {r} ({len(batches)} batches): {short(batches)}")

    # The promise: every rank's loader is built, given its epoch and read to the epoch's end without raising.
    broken = bool(fault)
    shown = fault

    if broken:
        print('FAILED [data loader fault] rank 1: the data loader raised IndexError in make(1, dp_rank=1, dp_world_size=2, global_batch_size=2, ...): Index 1 out of range for dataset of size 1.')
        print(f"here: {shown}")
        sys.exit(1)
    print("held: every rank's loader is built, given its epoch and read to the epoch's end without raising.")
