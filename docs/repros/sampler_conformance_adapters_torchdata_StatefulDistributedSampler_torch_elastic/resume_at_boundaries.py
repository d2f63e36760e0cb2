"""Reproduces [resume at an epoch's start and end] (resume_at_boundaries) of sampler_conformance.adapters.torchdata:StatefulDistributedSampler
without the sampler conformance suite, as its test_resume_at_the_epochs_boundaries[keep_last] found it.
Run: python resume_at_boundaries.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

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


def fresh(r, seed=GLOBAL_SEED):
    """Rank r's sampler, built once the global RNGs are seeded with ``seed``."""
    seed_global_rngs(seed)
    return build(W, r, epoch=None)


def passes(sampler, r, epochs):
    """The sampler's pass of each epoch of ``epochs``, set_epoch before each."""
    read_passes = []
    for epoch in epochs:
        set_epoch(sampler, epoch)
        read_passes.append(read(W, r, sampler)[0])
    return read_passes


def resumed(r, cuts, seed=GLOBAL_SEED):
    """Rank r's epoch EPOCH, checkpointed once it has taken each cut's items in all, each
    state loaded into a fresh sampler (the global RNGs seeded with ``seed``): the items taken
    before the checkpoints, and the last sampler."""
    sampler, taken = fresh(r), []
    for cut in cuts:
        set_epoch(sampler, EPOCH)
        taken += take(sampler, cut - len(taken))
        state, _ = through_checkpoint(sampler.state_dict())
        sampler = fresh(r, seed)
        sampler.load_state_dict(state)
    return taken, sampler


EPOCHS = [EPOCH + 1, EPOCH + 2]  # the loop goes on at the next epoch
expected = [passes(fresh(r), r, [EPOCH, *EPOCHS])[1:] for r in range(W)]
resumed_passes = []
for r in range(W):
    _, sampler = resumed(r, [LIMIT + 1])  # the state once the pass of EPOCH has ended
    resumed_passes.append(passes(sampler, r, EPOCHS))
print(f"{SPEC}: N={N}, W={W}, {OPTIONS}, resumed from a state taken after the pass of epoch {EPOCH} ended")
wrong = [(e, r, want, got) for r, (wants, gots) in enumerate(zip(expected, resumed_passes))
         for e, want, got in zip(EPOCHS, wants, gots) if want != got][:1]

# The promise: a state taken after the pass of epoch EPOCH ended resumes at the next epoch, in full, and the one after it: each as the uninterrupted run yields it.
broken = bool(wrong)
shown = "; ".join(f"rank {r}, epoch {e}: uninterrupted {short(want)}, resumed {short(got)}" for e, r, want, got in wrong)

if broken:
    print("FAILED [resume at an epoch's start and end] rank 0: resumed from a state taken after the pass of epoch 0 ended (the loop goes on at epoch 1), set_epoch(1) gave another epoch than the uninterrupted run's: expected [0], got []; position 0 is 0 in the uninterrupted run, and the resumed one ends before it")
    print(f"here: {shown}")
    sys.exit(1)
print('held: a state taken after the pass of epoch EPOCH ended resumes at the next epoch, in full, and the one after it: each as the uninterrupted run yields it.')
