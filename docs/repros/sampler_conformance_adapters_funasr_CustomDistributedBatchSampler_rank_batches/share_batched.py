"""Reproduces [batches cut from the rank's own share] (share_batched) of sampler_conformance.adapters.funasr:CustomDistributedBatchSampler
without the sampler conformance suite, as its test_edge_sizes[keep_last-N=2-W=8-shuffle] found it.
Run: python share_batched.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

import functools
import importlib
import itertools
import os
import sys

SPEC = sys.argv[1] if len(sys.argv) > 1 else 'sampler_conformance.adapters.funasr:CustomDistributedBatchSampler'  # or another sampler, to compare
N, W, EPOCH = 2, 8, None
OPTIONS = {'shuffle': True, 'drop_last': False, 'batch_size': 1}
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

# The promise: rank r's batches, one after another, are its strided share Q[r::W] of Q, the order one rank yields (num_replicas=1) padded from its head (1 items each), cut into batches of 1, only the last short.
Q = items_of(read(1, 0)[0])
SHARE, DROPPED = 1, 0
source = [p if p < N else (p - N) % N for p in range(SHARE * W)]  # the padding repeats Q from its head
padded = [Q[p] if p < len(Q) else None for p in source]  # None: Q lost it to its own dropped last batch
wrong = [f"one rank yields {len(Q)} items for N={N}"] if len(Q) > N else []
for r, (batches, _, _) in enumerate(ranks):
    share, got, sizes = padded[r::W], items[r], [len(batch) for batch in batches]
    if not N or not Q:
        wrong += [f"rank {r} yields {len(got)} items of an empty order"] if got else []
    elif not max(len(share) - DROPPED, 0) <= len(got) <= len(share):
        wrong.append(f"rank {r} yields {len(got)} items; its share of Q holds {len(share)}")
    elif any(want is not None and want != i for want, i in zip(share, got)):
        wrong.append(f"rank {r} yields {short(got)}; its share of Q is {short(share)}")
    elif any(size != B for size in sizes[:-1]) or (sizes and not 0 < sizes[-1] <= B):
        wrong.append(f"rank {r}'s batches hold {sizes} items: B={B} each, the last 1 to {B}")
broken = bool(wrong)
shown = f"Q = {short(Q)}; " + "; ".join(wrong[:3])

if broken:
    print("FAILED [batches cut from the rank's own share] rank 0 yields 2 items; its strided share Q[0::8] of Q, padded from its head, holds 1")
    print(f"here: {shown}")
    sys.exit(1)
print("held: rank r's batches, one after another, are its strided share Q[r::W] of Q, the order one rank yields (num_replicas=1) padded from its head (1 items each), cut into batches of 1, only the last short.")
