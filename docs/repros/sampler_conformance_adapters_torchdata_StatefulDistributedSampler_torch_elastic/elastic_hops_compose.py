"""Reproduces [world-size changes compose] (elastic_hops_compose) of sampler_conformance.adapters.torchdata:StatefulDistributedSampler
without the sampler conformance suite, as its test_world_size_changes_compose[keep_last-simulated] found it.
Run: python elastic_hops_compose.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

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
N, W, EPOCH = 1, 1, 0
OPTIONS = {'shuffle': False, 'seed': 0, 'drop_last': False}
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
K, W1, J, W2 = 1, 2, 0, 1  # W ranks take K each, W1 ranks J each, W2 the rest (as drawn)
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


def leg(world, state, count=None):
    """Each of ``world`` ranks: a fresh sampler that loads ``state`` (if any), set to EPOCH,
    then its first ``count(r)`` items (None: the rest of its pass); and rank 0's state after them."""
    shares, saved = [], None
    for r in range(world):
        seed_global_rngs()
        sampler = build(world, r, epoch=None)
        if state is not None:
            sampler.load_state_dict(state)
        set_epoch(sampler, EPOCH)
        shares.append(read(world, r, sampler)[0] if count is None else take(sampler, count(r)))
        if r == 0 and count is not None:
            saved, _ = through_checkpoint(sampler.state_dict())
    return shares, saved


first, state = leg(W, None, lambda r: min(K, len(whole[r])))
middle, state = leg(W1, state, lambda r: J)
rest, _ = leg(W2, state)
taken = first + middle
at = min(len(order), sum(map(len, taken)))  # the global cursor: items both legs took in all
got = interleaved(rest)
print(f"{SPEC}: N={N}, {OPTIONS}, epoch {EPOCH}: {K} items on each of W={W} ranks, {J} on each of W'={W1}, "
      f"then resumed on W''={W2}")
print(f"global order {short(order)}; taken on W ranks {short(interleaved(first))}, then on W' ranks "
      f"{short(interleaved(middle))}; the last ranks, interleaved: {short(got)}")

# The promise: resumed on W' ranks after K items on each of W, then on W'' after J more on each of W', the last ranks, interleaved, go on with the rest of the epoch's global order after both legs, then fewer than W'' padding items (with drop_last: a prefix of the whole order's rest, short of the epoch's rest by fewer than W'' items).
due = order[at:]
if DROP_LAST:
    broken = got != undropped[at:][: len(got)] or len(got) < len(due) - (W2 - 1)
else:
    padding = got[len(due) :]
    broken = (got[: len(due)] != due or len(padding) > -len(due) % W2
              or not set(list(padding)) <= set(list(order)))
shown = f"after {at} items the rest is {short(due)}; the new ranks yield {short(got)}"

if broken:
    print("FAILED [world-size changes compose] epoch 0: 1 item on each of W=1 ranks, then 0 items on each of W=2 ranks, resumed on W=1 from rank 0's state, the new ranks together (unit i of rank r at i*W + r) yield the rest of the epoch's global order after its first 1 item, [], and then 1 item more, [0], where padding to a multiple of W=1 needs 0")
    print(f"here: {shown}")
    sys.exit(1)
print("held: resumed on W' ranks after K items on each of W, then on W'' after J more on each of W', the last ranks, interleaved, go on with the rest of the epoch's global order after both legs, then fewer than W'' padding items (with drop_last: a prefix of the whole order's rest, short of the epoch's rest by fewer than W'' items).")
