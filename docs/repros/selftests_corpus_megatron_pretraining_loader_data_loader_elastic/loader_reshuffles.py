"""Reproduces [other batches after the epoch hook] (loader_reshuffles) of selftests.corpus.megatron:pretraining_loader
without the sampler conformance suite, as its test_loader_reshuffles[simulated] found it.
Run: python loader_reshuffles.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

import functools
import importlib
import inspect
import itertools
import os
import sys
import tempfile

SPEC = sys.argv[1] if len(sys.argv) > 1 else 'selftests.corpus.megatron:pretraining_loader'  # or another data loader factory, to compare
N, W, B, EPOCH = 4, 1, 1, 1  # instances, DP ranks, global batch size, epoch
OPTIONS = {'seed': 0, 'num_workers': 0}  # those the factory takes are given, and a fresh workdir a rank
LIMIT = 80  # a rank that yields more batches than this never stops


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


def ids(batch):
    """The instance ids a batch carries: the batch itself, or its "index" or "ids" entry."""
    if isinstance(batch, dict):
        batch = next(batch[key] for key in ('index', 'ids') if key in batch)
    return [int(i) for i in (batch.tolist() if hasattr(batch, "tolist") else batch)]


def build(world, rank, workdir):
    """Rank ``rank``'s loader of DP size ``world``, as the suite built it."""
    return Factory(N, dp_rank=rank, dp_world_size=world, global_batch_size=B, **taken({**OPTIONS, "workdir": workdir}))


def hook_of(loader):
    """The loader's epoch hook, reshuffle(epoch) or set_epoch(epoch); None where it has neither."""
    return next((getattr(loader, name) for name in ('reshuffle', 'set_epoch') if callable(getattr(loader, name, None))), None)


def read_rank(world, rank, epochs):
    """Rank ``rank``'s loader of DP size ``world``, built afresh, its epoch hook called before
    each of ``epochs`` (None: not called): per epoch, its batches' ids."""
    with tempfile.TemporaryDirectory() as workdir:
        loader = build(world, rank, workdir)
        read = []
        for epoch in epochs:
            if epoch is not None and hook_of(loader) is not None:
                hook_of(loader)(epoch)
            read.append([ids(batch) for batch in itertools.islice(loader, LIMIT + 1)])
        return read


def short(values):
    """A list, its middle left out where it is long."""
    values = list(values)
    if len(values) <= 16:
        return str(values)
    return f"{str(values[:12])[:-1]}, ... {len(values) - 16} more ..., {str(values[-4:])[1:]}"


if __name__ == "__main__":
    Factory = load(SPEC)
    print(f"{SPEC}: N={N}, W={W}, global_batch_size={B}, epoch={EPOCH}, {OPTIONS}")
    EPOCHS = [0, 1]  # as the suite's test drew them
    ranks = [read_rank(W, r, EPOCHS) for r in range(W)]
    for r, (first, second) in enumerate(ranks):
        print(f"rank {r}: epoch {EPOCHS[0]}: {short(first)}; epoch {EPOCHS[1]}: {short(second)}")

    # The promise: the epoch hook gives the next epoch other batches.
    broken = all(first == second for first, second in ranks) or (any(f for f, _ in ranks) and not any(s for _, s in ranks))
    shown = f"rank 0: epoch {EPOCHS[0]}: {short(ranks[0][0])}; epoch {EPOCHS[1]}: {short(ranks[0][1])}"

    if broken:
        print("FAILED [other batches after the epoch hook] the sampler has no set_epoch(), and two epochs of it, 0 and 1: every rank read the same batches, rank 0's beginning [0], [1], [2]")
        print(f"here: {shown}")
        sys.exit(1)
    print('held: the epoch hook gives the next epoch other batches.')
