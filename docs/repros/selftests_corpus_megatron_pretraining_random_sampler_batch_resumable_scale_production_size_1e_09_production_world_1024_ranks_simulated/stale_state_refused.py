"""Reproduces [a stale state is refused] (stale_state_refused) of selftests.corpus.megatron:pretraining_random_sampler
without the sampler conformance suite, as its test_stale_state_refused[keep_last] found it.
Run: python stale_state_refused.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

import functools
import importlib
import io
import itertools
import os
import sys

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
K = 1  # items rank 0 read before its checkpoint (as drawn)
OTHER_N, OTHER_W, OTHER_OPTIONS = 2, W, OPTIONS  # the resumed run's: another dataset size


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


def rank_0(n, world, options):
    sampler = Sampler(range(n), num_replicas=world, rank=0, **options)
    set_epoch(sampler, EPOCH)
    return sampler


here = take(rank_0(N, W, OPTIONS), LIMIT + 1)
there = take(rank_0(OTHER_N, OTHER_W, OTHER_OPTIONS), LIMIT + 1)
saved = rank_0(N, W, OPTIONS)
taken = take(saved, K)
state, _ = through_checkpoint(saved.state_dict())
print(f"{SPEC}: N={N}, W={W}, {OPTIONS}: rank 0 saved {str(state)[:200]} after {short(taken)} of epoch {EPOCH}")
print(f"rank 0's pass of epoch {EPOCH}: {short(here)}; under N={OTHER_N}, W={OTHER_W}, {OTHER_OPTIONS}: {short(there)}")
stale = rank_0(OTHER_N, OTHER_W, OTHER_OPTIONS)
refusal, step, first = None, "load_state_dict(state)", None
try:
    stale.load_state_dict(state)
    step = "set_epoch and the first item"
    set_epoch(stale, EPOCH)
    first = next(iter(stale), None)
except Exception as exc:  # any refusal will do
    refusal = f"{type(exc).__name__} in {step}: {exc}"
print(f"refused: {refusal}" if refusal else f"loaded, and the pass went on (its next item: {first})")

# The promise: a state saved under other arguments (here: another dataset size) raises at load_state_dict or at the first item, where rank 0's pass of the epoch differs under them.
broken = refusal is None and bool(taken) and here != there
shown = f"rank 0 of N={OTHER_N}, W={OTHER_W}, {OTHER_OPTIONS} loaded the state of rank 0 of N={N}, W={W}, {OPTIONS} without an error (its next item: {first}), where its own pass is {short(there)}"

if broken:
    print("FAILED [a stale state is refused] a state saved by rank 0 after 1 item of epoch 0 was loaded by a sampler built with another dataset size (N=2, W=1, shuffle=True, seed=0, epoch=None, drop_last=False, batch_size=1), under which rank 0's pass of the epoch differs, and it went on without an error; a stale state must raise at load_state_dict or at the first item, else the job silently resumes at the wrong items")
    print(f"here: {shown}")
    sys.exit(1)
print("held: a state saved under other arguments (here: another dataset size) raises at load_state_dict or at the first item, where rank 0's pass of the epoch differs under them.")
