"""Reproduces [sampler fault] (edge_sizes) of sampler_conformance.adapters.catalyst:DistributedSamplerWrapper
without the sampler conformance suite, as its test_edge_sizes[keep_last-N=0-W=1-shuffle] found it.
Run: python edge_sizes.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

import functools
import importlib
import itertools
import os
import sys
import traceback

SPEC = sys.argv[1] if len(sys.argv) > 1 else 'sampler_conformance.adapters.catalyst:DistributedSamplerWrapper'  # or another sampler, to compare
N, W, EPOCH = 0, 1, None
RANKS = range(W)  # the ranks read: every one
OPTIONS = {'shuffle': True, 'seed': 0}
DATASET = range(N)  # as the suite's dataset: N items, item i is i
LIMIT = 64  # a rank that yields more indices than this never stops


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


def take(sampler, count):
    """A pass's first ``count`` indices (fewer, where it ends first)."""
    return list(itertools.islice(sampler, count))


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


Sampler = load(SPEC)
print(f"{SPEC}: N={N}, W={W}, epoch={EPOCH}, {OPTIONS}")
ranks, fault = [], ""
for r in range(W):
    try:
        ranks.append(read(W, r))
    except Exception as exc:  # the sampler's own: in its constructor, set_epoch, len() or its pass
        fault = f"rank {r}: {type(exc).__name__}: {exc}"
        traceback.print_exc(file=sys.stdout)
        break
    indices, before, after = ranks[-1]
    print(f"rank {r} ({len(indices)} indices, len()={after}): {short(indices)}")

# The promise: every rank's sampler is built, set to its epoch and read to the end of its pass without raising.
broken = bool(fault)
shown = fault

if broken:
    print('FAILED [sampler fault] rank 0: the sampler raised TypeError while iterating: itemgetter expected 1 argument, got 0')
    print(f"here: {shown}")
    sys.exit(1)
print("held: every rank's sampler is built, set to its epoch and read to the end of its pass without raising.")
