"""Reproduces [nothing repeated or lost across a change of world size] (elastic_exactly_once) of sampler_conformance.adapters.torchdata:StatefulDistributedSampler
without the sampler conformance suite, as its test_elastic_resume_yields_each_item_once[keep_last-simulated] found it.
Run: python elastic_exactly_once.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

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

SPEC = sys.argv[1] if len(sys.argv) > 1 else 'sampler_conformance.adapters.torchdata:StatefulDistributedSampler'  # or another sampler, to compare
N, W, EPOCH = 2, 1, 0
OPTIONS = {'shuffle': False, 'seed': 0, 'drop_last': False}
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
K, W2 = 1, 2  # items each of the W ranks read before the checkpoint (as drawn); ranks resumed on
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


def interleaved(shares):
    """The global order the ranks take turns through: item i of rank r at position i * W + r."""
    longest = max(map(len, shares), default=0)
    return [share[i] for i in range(longest) for share in shares if i < len(share)]


def whole_epoch(**options):
    passes = []
    for r in range(W):
        seed_global_rngs()
        sampler = build(W, r, epoch=None, **options)
        set_epoch(sampler, EPOCH)
        passes.append(read(W, r, sampler)[0])
    return passes


DROP_LAST = OPTIONS.get("drop_last", False)
whole = whole_epoch()
order = interleaved(whole)[:N]  # the epoch's global order, its padding cut off
undropped = interleaved(whole_epoch(drop_last=False))[:N] if DROP_LAST else order
taken = []
for r in range(W):
    seed_global_rngs()
    sampler = build(W, r, epoch=None)
    set_epoch(sampler, EPOCH)
    taken.append(take(sampler, min(K, len(whole[r]))))
    if r == 0:
        state, _ = through_checkpoint(sampler.state_dict())  # rank 0's state is the one resumed on W' ranks
rest = []
for r in range(W2):
    seed_global_rngs()
    sampler = build(W2, r, epoch=None)
    sampler.load_state_dict(state)
    set_epoch(sampler, EPOCH)
    rest.append(read(W2, r, sampler)[0])
at = min(len(order), sum(map(len, taken)))  # the global cursor: items the W ranks took in all
got = interleaved(rest)
print(f"{SPEC}: N={N}, {OPTIONS}, epoch {EPOCH}: {K} items on each of W={W} ranks, then resumed on W'={W2}")
print(f"global order {short(order)}; taken {short(interleaved(taken))}; the new ranks, interleaved: {short(got)}")

# The promise: across the change of world size, no item repeats beyond the padding W' ranks need and none is lost (with drop_last: none repeats, and fewer than W' are lost).
due = collections.Counter(i for share in whole for i in list(share))
counts = collections.Counter(i for share in taken + rest for i in list(share))
left = len(order) - at
beyond = {i: 1 for i in range(N)} if DROP_LAST else due
surplus = sum(max(n - beyond.get(i, 0), 0) for i, n in counts.items())
lost = sorted(i for i in due if not counts[i])
broken = surplus > (0 if DROP_LAST else -left % W2) or len(lost) > ((W2 - 1) if DROP_LAST else 0)
repeated = sorted(i for i, n in counts.items() if n > beyond.get(i, 0))
shown = f"{surplus} items repeated: {short(repeated)}; never yielded: {short(lost)}"

if broken:
    print("FAILED [nothing repeated or lost across a change of world size] epoch 0: 1 item on each of W=1 ranks, resumed on W=2 from rank 0's state, the ranks together never yield 1 item of the epoch: [1]")
    print(f"here: {shown}")
    sys.exit(1)
print("held: across the change of world size, no item repeats beyond the padding W' ranks need and none is lost (with drop_last: none repeats, and fewer than W' are lost).")
