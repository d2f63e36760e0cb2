"""Reproduces [each item at most once per epoch, only an incomplete last round left out] (each_item_once) of selftests.corpus.fairchem:max_atom_distributed_batch_sampler
without the sampler conformance suite, as its test_batch_epoch[simulated-each_item_once] found it.
Run: python each_item_once.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

import collections
import functools
import importlib
import inspect
import itertools
import os
import sys

SPEC = sys.argv[1] if len(sys.argv) > 1 else 'selftests.corpus.fairchem:max_atom_distributed_batch_sampler'  # or another batch sampler factory, to compare
N, W, EPOCH = 3, 2, 0
LENGTHS = [1, 1, 1]  # item i's length
OPTIONS = {'seed': 0, 'max_tokens': 1}  # those the factory takes are given
COST = 'sum'  # a batch's cost against max_tokens: "sum" of its lengths, or "padded" (longest x count)
EMPTY_BATCHES = False  # whether the contract counts an empty batch as a step (Poisson)
LIMIT = 76  # a rank that yields more batches than this never stops


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
ranks = [read_rank(W, r, [EPOCH])[0][0] for r in range(W)]
for r, batches in enumerate(ranks):
    print(f"rank {r} ({len(batches)} batches): {short(batches)}")

# The promise: each item at most once in the epoch across ranks; those left out fit in an incomplete last round (W - 1 batches of max_tokens, or fewer than batch_size items).
counts = collections.Counter(i for batches in ranks for batch in batches for i in batch)
twice = sorted(i for i, n in counts.items() if n > 1)
missing = [i for i in range(N) if not counts[i]]
if OPTIONS.get("batch_size"):
    left_out, allowed = len(missing), OPTIONS["batch_size"] - 1
else:
    left_out = sum(min(LENGTHS[i], OPTIONS["max_tokens"]) for i in missing)
    allowed = (W - 1) * OPTIONS["max_tokens"]
broken = bool(twice) or left_out > allowed
shown = f"yielded more than once: {short(twice)}; never yielded: {short(missing)} ({left_out}, where at most {allowed} may be)"

if broken:
    print('FAILED [each item at most once per epoch, only an incomplete last round left out] 1 item(s) yielded more than once in the epoch, [1] (item 1 2 times): trained on twice, and counted twice in an evaluation')
    print(f"here: {shown}")
    sys.exit(1)
print('held: each item at most once in the epoch across ranks; those left out fit in an incomplete last round (W - 1 batches of max_tokens, or fewer than batch_size items).')
