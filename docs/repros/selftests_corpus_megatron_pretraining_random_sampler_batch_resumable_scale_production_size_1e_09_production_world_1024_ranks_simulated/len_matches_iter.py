"""Reproduces [len() matches iteration] (len_matches_iter) of selftests.corpus.megatron:pretraining_random_sampler
without the sampler conformance suite, as its test_edge_sizes[keep_last-N=4-W=4-shuffle] found it.
Run: python len_matches_iter.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

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
ranks = [read(W, r) for r in RANKS]
print(f"{SPEC}: N={N}, W={W}, epoch={EPOCH}, {OPTIONS}")
for r, (indices, before, after) in zip(RANKS, ranks):
    print(f"rank {r} ({len(indices)} indices, len()={after}): {short(indices)}")

# The promise: len(sampler), asked before a pass and after it, is the number of indices the pass yields.
wrong = [(r, before, after, len(indices)) for r, (indices, before, after) in zip(RANKS, ranks)
         if not before == after == len(indices)]
broken = bool(wrong)
shown = "; ".join(f"rank {r}: len() is {b} before the pass and {a} after it, but it yielded {n}" for r, b, a, n in wrong)

if broken:
    print('FAILED [len() matches iteration] rank 0: before the pass, len(sampler) is 4, but one iteration yielded 1 index: a training loop sizes its epoch (LR schedule, progress bar) from len() before the epoch starts')
    print(f"here: {shown}")
    sys.exit(1)
print('held: len(sampler), asked before a pass and after it, is the number of indices the pass yields.')
