"""Reproduces [sampler fault] (weighted_runs) of sampler_conformance.adapters.monai:DistributedWeightedRandomSampler
without the sampler conformance suite, as its test_weighted_seed_effective[simulated] found it.
Run: python weighted_runs.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

import functools
import importlib
import inspect
import itertools
import os
import sys
import traceback

SPEC = sys.argv[1] if len(sys.argv) > 1 else 'sampler_conformance.adapters.monai:DistributedWeightedRandomSampler'  # or another weighted sampler factory, to compare
W, EPOCH = 7, 321
WEIGHTS = [2.0, 0.0, 1.0, 3.0, 0.0, 4.0, 4.0]  # item i's weight
OPTIONS = {'seed': 6667, 'num_samples': 22}  # those the factory takes are given
LIMIT = 152  # a rank that draws more than this in an epoch never stops


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
fault = ""
for r in range(W):
    try:
        ((draws, _),) = read_rank(W, r, [EPOCH])
    except Exception as exc:  # the sampler's own: in the factory, set_epoch, len() or its pass
        fault = f"rank {r}: {type(exc).__name__}: {exc}"
        traceback.print_exc(file=sys.stdout)
        break
    print(f"rank {r} ({len(draws)} draws): {short(draws)}")

# The promise: every rank's sampler is built, set to its epoch and draws its epoch without raising.
broken = bool(fault)
shown = fault

if broken:
    print('FAILED [sampler fault] rank 4: the sampler raised RuntimeError while iterating: invalid multinomial distribution (sum of probabilities <= 0)')
    print(f"here: {shown}")
    sys.exit(1)
print("held: every rank's sampler is built, set to its epoch and draws its epoch without raising.")
