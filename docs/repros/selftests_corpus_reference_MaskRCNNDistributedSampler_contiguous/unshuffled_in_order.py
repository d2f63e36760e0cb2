"""Reproduces [shuffle=False keeps dataset order] (unshuffled_in_order) of selftests.corpus.reference:MaskRCNNDistributedSampler
without the sampler conformance suite, as its test_edge_sizes[keep_last-N=4-W=4-no_shuffle] found it.
Run: python unshuffled_in_order.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

import functools
import importlib
import itertools
import os
import sys

SPEC = sys.argv[1] if len(sys.argv) > 1 else 'selftests.corpus.reference:MaskRCNNDistributedSampler'  # or another sampler, to compare
N, W, EPOCH = 4, 4, None
RANKS = range(W)  # the ranks read: every one
OPTIONS = {'shuffle': False}
DATASET = range(N)  # as the suite's dataset: N items, item i is i
LIMIT = 80  # a rank that yields more indices than this never stops


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
ranks = [read(W, r) for r in RANKS]
print(f"{SPEC}: N={N}, W={W}, epoch={EPOCH}, {OPTIONS}")
for r, (indices, before, after) in zip(RANKS, ranks):
    print(f"rank {r} ({len(indices)} indices, len()={after}): {short(indices)}")

# The promise: with shuffle=False the global order Q starts with range(N) in order.
lengths = [len(indices) for indices, _, _ in ranks]
Q = [i for indices, _, _ in ranks for i in indices]
broken = Q is None or Q[:N] != list(range(min(N, len(Q))))
shown = f"Q = {short(Q)}" if Q is not None else f"the ranks yield different numbers of indices {lengths}"

if broken:
    print('FAILED [shuffle=False keeps dataset order] with shuffle=False the global order must be range(N) in order: Q[2] should be 2, got 3; Q = [0, 1, 3, 2]')
    print(f"here: {shown}")
    sys.exit(1)
print('held: with shuffle=False the global order Q starts with range(N) in order.')
