"""Reproduces [seed changes the order] (seed_effective) of sampler_conformance.adapters.lightning:UnrepeatedDistributedSampler
without the sampler conformance suite, as its test_seed_changes_order[keep_last] found it.
Run: python seed_effective.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

import functools
import importlib
import itertools
import os
import sys

SPEC = sys.argv[1] if len(sys.argv) > 1 else 'sampler_conformance.adapters.lightning:UnrepeatedDistributedSampler'  # or another sampler, to compare
N, W, EPOCH = 10, 1, None
OPTIONS = {'shuffle': True, 'seed': 1, 'drop_last': False}
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
SEEDS = [0, 1]  # the seeds the suite's test drew
orders = [[i for r in range(W) for i in read(W, r, build(W, r, seed=seed))[0]] for seed in SEEDS]
print(f"{SPEC}: N={N}, W={W}, epoch={EPOCH}, {OPTIONS}")
for seed, order in zip(SEEDS, orders):
    print(f"seed={seed}: {short(order)} (ranks concatenated)")

# The promise: two seeds give two orders (where at least 10 items are compared).
broken = len(orders[0]) >= 10 and orders[0] == orders[1]
shown = f"seed={SEEDS[0]} and seed={SEEDS[1]} gave the same indices on every rank: {short(orders[0])}"

if broken:
    print('FAILED [seed changes the order] seed=0 and seed=1 must give different orders, but both gave the same indices on every rank: [4, 1, 7, 5, 3, 9, 0, 8, 6, 2] (ranks concatenated)')
    print(f"here: {shown}")
    sys.exit(1)
print('held: two seeds give two orders (where at least 10 items are compared).')
