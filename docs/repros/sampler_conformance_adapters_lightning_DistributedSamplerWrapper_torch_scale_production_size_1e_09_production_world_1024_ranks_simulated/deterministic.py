"""Reproduces [identical order without set_epoch] (deterministic) of sampler_conformance.adapters.lightning:DistributedSamplerWrapper
without the sampler conformance suite, as its test_same_order_without_set_epoch[keep_last] found it.
Run: python deterministic.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

import functools
import importlib
import itertools
import os
import pickle
import random
import sys

import numpy
import torch

SPEC = sys.argv[1] if len(sys.argv) > 1 else 'sampler_conformance.adapters.lightning:DistributedSamplerWrapper'  # or another sampler, to compare
N, W, EPOCH = 2, 1, None
RANKS = range(W)  # the ranks read: every one
OPTIONS = {'shuffle': True, 'seed': 0, 'drop_last': False}
DATASET = range(N)  # as the suite's dataset: N items, item i is i
LIMIT = 72  # a rank that yields more indices than this never stops


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
GLOBAL_SEED = 0  # the global RNGs' seed the suite drew


def seed_global_rngs(seed):
    torch.manual_seed(seed)
    numpy.random.seed(seed % 2**32)
    random.seed(seed)


def global_rngs():
    """torch's, numpy's and random's global RNG states, to see whether iterating advanced them."""
    return {"torch": bytes(torch.get_rng_state().tolist()), "numpy": pickle.dumps(numpy.random.get_state()),
            "random": random.getstate()}


ranks, again, fresh, touched = [], [], [], set()
for r in range(W):
    seed_global_rngs(GLOBAL_SEED)
    sampler = build(W, r)
    before = global_rngs()
    ranks.append(read(W, r, sampler))
    touched |= {name for name, state in global_rngs().items() if state != before[name]}
    again.append(read(W, r, sampler)[0])
    seed_global_rngs(GLOBAL_SEED + 1)
    fresh.append(read(W, r)[0])
print(f"{SPEC}: N={N}, W={W}, epoch={EPOCH}, {OPTIONS}, global RNGs seeded with {GLOBAL_SEED}")
for r, (indices, before, after) in enumerate(ranks):
    print(f"rank {r} ({len(indices)} indices): {short(indices)}; again: {short(again[r])}; fresh: {short(fresh[r])}")

# The promise: without set_epoch a sampler's order depends on its arguments alone: iterated again, or built afresh once the global RNGs are reseeded, it yields the same indices, and iterating leaves torch's, numpy's and random's global RNGs as they were.
changed = [r for r in range(W) if again[r] != ranks[r][0]]
reseeded = [r for r in range(W) if fresh[r] != ranks[r][0]]
broken = bool(changed or reseeded or touched)
shown = "; ".join([f"rank {r} yielded {short(ranks[r][0])}, then {short(again[r])} iterated again" for r in changed[:2]]
                  + [f"rank {r} built afresh, the global RNGs reseeded, yielded {short(fresh[r])}" for r in reseeded[:2]]
                  + [f"iterating advanced the global RNGs of {', '.join(sorted(touched))}"] * bool(touched))

if broken:
    print('FAILED [identical order without set_epoch] iterating the same samplers twice, without set_epoch, changed the order: rank 0 first yielded [0, 1], then [1, 0]; position 0 is 0 in the first reading and 1 in the second')
    print(f"here: {shown}")
    sys.exit(1)
print("held: without set_epoch a sampler's order depends on its arguments alone: iterated again, or built afresh once the global RNGs are reseeded, it yields the same indices, and iterating leaves torch's, numpy's and random's global RNGs as they were.")
