"""Reproduces [the same stream for the same seed and epoch] (weighted_deterministic) of sampler_conformance.adapters.lightning:WeightedDistributedSamplerWrapper
without the sampler conformance suite, as its test_weighted_deterministic[simulated] found it.
Run: python weighted_deterministic.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

import functools
import importlib
import inspect
import itertools
import os
import sys

SPEC = sys.argv[1] if len(sys.argv) > 1 else 'sampler_conformance.adapters.lightning:WeightedDistributedSamplerWrapper'  # or another weighted sampler factory, to compare
W, EPOCH = 1, 1
WEIGHTS = [1.0, 1.0]  # item i's weight
OPTIONS = {'seed': 0, 'num_samples': 1}  # those the factory takes are given
LIMIT = 72  # a rank that draws more than this in an epoch never stops


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


def read_rank(world, rank, epochs, **options):
    """Rank ``rank``'s sampler of ``world``, built afresh (``options`` in place of OPTIONS' own),
    set_epoch(e) before each of ``epochs`` (None: not called): per epoch, its draws, and len()
    after the pass."""
    sampler = Factory(WEIGHTS, num_replicas=world, rank=rank, **taken({**OPTIONS, **options}))
    read = []
    for epoch in epochs:
        if epoch is not None and callable(getattr(sampler, "set_epoch", None)):
            sampler.set_epoch(epoch)
        draws = list(itertools.islice(sampler, LIMIT + 1))
        read.append((draws, len(sampler) if hasattr(type(sampler), "__len__") else "no __len__"))
    return read


def short(values):
    """A list, its middle left out where it is long."""
    values = list(values)
    if len(values) <= 16:
        return str(values)
    return f"{str(values[:12])[:-1]}, ... {len(values) - 16} more ..., {str(values[-4:])[1:]}"


Factory = load(SPEC)
print(f"{SPEC}: W={W}, epoch={EPOCH}, {OPTIONS}, weights {short(WEIGHTS)}")
BEFORE = 0  # the epoch the first samplers read before EPOCH, as the suite's test drew it
first = [read_rank(W, r, [BEFORE, EPOCH])[-1][0] for r in range(W)]
hooked = callable(getattr(Factory(WEIGHTS, num_replicas=W, rank=0, **taken(OPTIONS)), "set_epoch", None))
# A fresh sampler reads EPOCH alone, as a run resumed there does; one without set_epoch, its passes again.
fresh = [read_rank(W, r, [EPOCH] if hooked else [BEFORE, EPOCH])[-1][0] for r in range(W)]
for r in range(W):
    print(f"rank {r}: after epoch {BEFORE}: {short(first[r])}; fresh: {short(fresh[r])}")

# The promise: the draws of an epoch are set by the seed and the epoch: a sampler that read another epoch first, and a fresh one, draw the same.
broken = first != fresh
shown = f"rank 0 after epoch {BEFORE}: {short(first[0])}; fresh: {short(fresh[0])}"

if broken:
    print('FAILED [the same stream for the same seed and epoch] epoch 1 read after epoch 0, and by a fresh sampler, differs: rank 0 first yielded [0], then [1]; position 0 is 0 in the first reading and 1 in the second')
    print(f"here: {shown}")
    sys.exit(1)
print('held: the draws of an epoch are set by the seed and the epoch: a sampler that read another epoch first, and a fresh one, draw the same.')
