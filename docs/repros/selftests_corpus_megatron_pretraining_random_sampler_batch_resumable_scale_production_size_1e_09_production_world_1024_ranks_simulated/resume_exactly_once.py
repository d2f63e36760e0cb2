"""Reproduces [nothing repeated or lost across a resume] (resume_exactly_once) of selftests.corpus.megatron:pretraining_random_sampler
without the sampler conformance suite, as its test_resume_yields_each_item_once[keep_last] found it.
Run: python resume_exactly_once.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

import collections
import functools
import importlib
import io
import itertools
import os
import random
import sys

import numpy
import torch

SPEC = sys.argv[1] if len(sys.argv) > 1 else 'selftests.corpus.megatron:pretraining_random_sampler'  # or another sampler, to compare
N, W, EPOCH = 1, 1, 0
RANKS = range(W)  # the ranks read: every one
OPTIONS = {'batch_size': 1}
DATASET = range(N)  # as the suite's dataset: N items, item i is i
LIMIT = 68  # a rank that yields more indices than this never stops


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
K, LATER = 1, 0  # items each rank read before its checkpoint (as drawn); epochs read after
GLOBAL_SEED = 0  # torch's, numpy's and random's global RNGs are seeded with it before every build


def seed_global_rngs(seed=GLOBAL_SEED):
    torch.manual_seed(seed)
    numpy.random.seed(seed % 2**32)
    random.seed(seed)


def set_epoch(sampler, epoch):
    if callable(getattr(sampler, "set_epoch", None)):
        sampler.set_epoch(epoch)


def through_checkpoint(state):
    """As a checkpoint file carries it: torch.save, then torch.load(weights_only=True), plain data only;
    where it cannot, the state itself and why not (the line where torch names what it refused)."""
    buffer = io.BytesIO()
    try:
        torch.save(state, buffer)
        buffer.seek(0)
        return torch.load(buffer, weights_only=True), ""
    except Exception as exc:
        why = next((line for line in str(exc).splitlines() if "Unsupported global" in line), str(exc))
        why = why.split("Unsupported global: ", 1)[-1].split(". Please use", 1)[0]
        return state, f"{type(exc).__name__}: {' '.join(why.split())[:300]}"


uninterrupted, taken, resumed = [], [], []
for r in range(W):
    seed_global_rngs()
    sampler = build(W, r, epoch=None)
    passes = []
    for epoch in range(EPOCH, EPOCH + 1 + LATER):
        set_epoch(sampler, epoch)
        passes.append(read(W, r, sampler)[0])
    uninterrupted.append(passes)
    seed_global_rngs()
    sampler = build(W, r, epoch=None)
    set_epoch(sampler, EPOCH)
    taken.append(take(sampler, min(K, len(passes[0]))))
    state, _ = through_checkpoint(sampler.state_dict())
    seed_global_rngs()
    sampler = build(W, r, epoch=None)
    sampler.load_state_dict(state)
    passes = []
    for epoch in range(EPOCH, EPOCH + 1 + LATER):
        set_epoch(sampler, epoch)
        passes.append(read(W, r, sampler)[0])
    resumed.append(passes)
print(f"{SPEC}: N={N}, W={W}, {OPTIONS}, epoch {EPOCH} interrupted after {K} items on each rank")
for r in range(W):
    print(f"rank {r}: uninterrupted {short(uninterrupted[r][0])}; before the checkpoint {short(taken[r])}; "
          f"resumed {short(resumed[r][0])}")

# The promise: across the ranks, the interrupted epoch repeats no item beyond the uninterrupted epoch's padding and loses none.
due = collections.Counter(i for r in range(W) for i in items_of(uninterrupted[r][0]))
got = collections.Counter(i for r in range(W) for i in items_of(taken[r] + resumed[r][0]))
repeated = sorted(i for i in got if got[i] > due[i])
lost = sorted(i for i in due if not got[i])
broken = bool(repeated or lost)
shown = f"repeated: {short(repeated)}; never yielded: {short(lost)}"

if broken:
    print("FAILED [nothing repeated or lost across a resume] resumed after 1 item of epoch 0, the ranks together repeat 1 item beyond the uninterrupted epoch's padding: [0]")
    print(f"here: {shown}")
    sys.exit(1)
print("held: across the ranks, the interrupted epoch repeats no item beyond the uninterrupted epoch's padding and loses none.")
