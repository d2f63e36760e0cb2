"""Reproduces [generation batches of whole groups] (repeat_groups) of sampler_conformance.adapters.axolotl:SequenceParallelRepeatRandomSampler
without the sampler conformance suite, as its test_per_epoch_invariant[simulated-repeat_groups-keep_last] found it.
Run: python repeat_groups.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

import functools
import importlib
import itertools
import os
import sys

SPEC = sys.argv[1] if len(sys.argv) > 1 else 'sampler_conformance.adapters.axolotl:SequenceParallelRepeatRandomSampler'  # or another sampler, to compare
N, W, EPOCH = 2, 2, None
OPTIONS = {'shuffle': False, 'seed': 0, 'drop_last': False, 'batch_size': 1, 'repeats': 2}
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

# The promise: each generation batch, round t of the ranks' batches concatenated rank by rank, is groups of G=2 consecutive copies of one index.
G = 2
generations = [[i for batch in round_ for i in batch] for round_ in zip(*(batches for batches, _, _ in ranks))]
wrong = [(t, gathered) for t, gathered in enumerate(generations) if len(gathered) % G
         or any(len(set(gathered[j : j + G])) > 1 for j in range(0, len(gathered), G))]
broken = bool(wrong)
shown = "; ".join(f"generation batch {t}: {short(gathered)}" for t, gathered in wrong[:2])

if broken:
    print("FAILED [generation batches of whole groups] generation batch 0 (round 0 of the ranks' batches, rank 0's first, as the trainer's gather concatenates them) should be groups of G=2 copies of one index, but group 0 holds [0, 1]: [0, 1]; the trainer's rewards.view(-1, 2) then normalises rewards across different samples")
    print(f"here: {shown}")
    sys.exit(1)
print("held: each generation batch, round t of the ranks' batches concatenated rank by rank, is groups of G=2 consecutive copies of one index.")
