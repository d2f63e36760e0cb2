"""Reproduces [sampler fault] (batches_run) of sampler_conformance.adapters.lhotse:DynamicBucketingSampler
without the sampler conformance suite, as its test_batches_run[simulated] found it.
Run: python batches_run.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

import functools
import importlib
import inspect
import itertools
import os
import sys
import traceback

SPEC = sys.argv[1] if len(sys.argv) > 1 else 'sampler_conformance.adapters.lhotse:DynamicBucketingSampler'  # or another batch sampler factory, to compare
N, W, EPOCH = 0, 1, None
LENGTHS = []  # item i's length
OPTIONS = {'seed': 0, 'max_tokens': 1}  # those the factory takes are given
COST = 'padded'  # a batch's cost against max_tokens: "sum" of its lengths, or "padded" (longest x count)
EMPTY_BATCHES = False  # whether the contract counts an empty batch as a step (Poisson)
LIMIT = 64  # a rank that yields more batches than this never stops


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


def indices(batch):
    """A batch's indices: a list or tuple of them, or a 1-D integer tensor or array; None for anything else."""
    if isinstance(batch, (list, tuple)):
        return list(batch)
    if getattr(batch, "ndim", None) == 1 and "int" in str(batch.dtype):
        return batch.tolist()
    return None


def length(sampler):
    """len(sampler), or what stood in its way."""
    if not hasattr(type(sampler), "__len__"):
        return "no __len__"
    try:
        return len(sampler)
    except Exception as exc:  # the sampler's: batch_len_matches is charged with it, the rest read on
        return f"len() raised {type(exc).__name__}"


def read_rank(world, rank, epochs):
    """Rank ``rank``'s batch sampler of ``world``, built afresh, set_epoch(e) before each of
    ``epochs`` (None: not called): per epoch, its batches, len() before the pass and after it."""
    sampler = Factory(LENGTHS, num_replicas=world, rank=rank, **taken(OPTIONS))
    read = []
    for epoch in epochs:
        if epoch is not None and callable(getattr(sampler, "set_epoch", None)):
            sampler.set_epoch(epoch)
        before = length(sampler)
        batches = [indices(batch) for batch in itertools.islice(sampler, LIMIT + 1)]
        read.append((batches, before, length(sampler)))
    return read


def short(values):
    """A list, its middle left out where it is long."""
    values = list(values)
    if len(values) <= 16:
        return str(values)
    return f"{str(values[:12])[:-1]}, ... {len(values) - 16} more ..., {str(values[-4:])[1:]}"


Factory = load(SPEC)
print(f"{SPEC}: N={N}, W={W}, epoch={EPOCH}, {OPTIONS}, lengths {short(LENGTHS)}")
fault = ""
for r in range(W):
    try:
        ((batches, _, _),) = read_rank(W, r, [EPOCH])
    except Exception as exc:  # the sampler's own: in the factory, set_epoch, len() or its pass
        fault = f"rank {r}: {type(exc).__name__}: {exc}"
        traceback.print_exc(file=sys.stdout)
        break
    print(f"rank {r} ({len(batches)} batches): {short(batches)}")

# The promise: every rank's batch sampler is built, set to its epoch and read to the epoch's end without raising.
broken = bool(fault)
shown = fault

if broken:
    print('FAILED [sampler fault] rank 0: the sampler raised AssertionError in make(lengths, num_replicas=1, rank=0, ...): The number of buckets (10) must be smaller than or equal to the number of cuts (0).')
    print(f"here: {shown}")
    sys.exit(1)
print("held: every rank's batch sampler is built, set to its epoch and read to the epoch's end without raising.")
