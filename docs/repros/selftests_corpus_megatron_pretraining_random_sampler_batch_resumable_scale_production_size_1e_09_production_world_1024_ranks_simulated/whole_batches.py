"""Reproduces [batches whole on one rank] (whole_batches) of selftests.corpus.megatron:pretraining_random_sampler
without the sampler conformance suite, as its test_edge_sizes[keep_last-N=4-W=4-shuffle] found it.
Run: python whole_batches.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

import functools
import importlib
import itertools
import os
import sys

SPEC = sys.argv[1] if len(sys.argv) > 1 else 'selftests.corpus.megatron:pretraining_random_sampler'  # or another sampler, to compare
N, W, EPOCH = 4, 4, None
RANKS = range(W)  # the ranks read: every one
OPTIONS = {'batch_size': 1}
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


B = OPTIONS["batch_size"]  # items a batch holds (the last may hold fewer)


def as_list(batch):
    """A tuple, or a 1-D tensor or array, as its items; any other batch as it is."""
    if getattr(batch, "ndim", None) == 1:
        return batch.tolist()
    return list(batch) if isinstance(batch, tuple) else batch


def take(sampler, count):
    """A pass's first ``count`` batches (fewer, where it ends first), each as a list."""
    return [as_list(batch) for batch in itertools.islice(sampler, count)]


def items_of(batches):
    """The batches' items, one after another."""
    return [i for batch in batches for i in batch]


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


def batches_shown(batches):
    """The batches, each shortened, the middle ones left out where there are many."""
    parts = [short(batch) for batch in batches]
    parts = parts if len(parts) <= 6 else [*parts[:4], f"... {len(parts) - 5} more ...", parts[-1]]
    return f"[{', '.join(parts)}]"


ranks = [read(W, r) for r in range(W)]
items = [items_of(batches) for batches, _, _ in ranks]
print(f"{SPEC}: N={N}, W={W}, epoch={EPOCH}, " + ", ".join(
    f"{name}={short(value) if isinstance(value, list) else value}" for name, value in OPTIONS.items()))
for r, (batches, before, after) in enumerate(ranks):
    print(f"rank {r} ({len(batches)} batches, len()={after}): {batches_shown(batches)}")

# The promise: rank r's k-th batch is batch k*W + r of the batches one rank yields (num_replicas=1).
one = read(1, 0)[0]
wrong = [(r, k, k * W + r) for r, (batches, _, _) in enumerate(ranks) for k, batch in enumerate(batches)
         if k * W + r < len(one) and list(batch) != list(one[k * W + r])]
broken = bool(wrong)
shown = f"one rank yields {short(one)}" + "".join(
    f"; rank {r}'s batch {k} should be batch {p} of those, {one[p]}, got {ranks[r][0][k]}" for r, k, p in wrong[:3])

if broken:
    print("FAILED [batches whole on one rank] rank 2's batch 0 should be batch 2 of the one-rank sequence, [3], got [2]")
    print(f"here: {shown}")
    sys.exit(1)
print("held: rank r's k-th batch is batch k*W + r of the batches one rank yields (num_replicas=1).")
