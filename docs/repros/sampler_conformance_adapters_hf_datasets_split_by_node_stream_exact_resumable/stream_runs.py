"""Reproduces [dataset fault] (stream_runs) of sampler_conformance.adapters.hf_datasets:split_by_node
without the sampler conformance suite, as its test_stream_resume_continues[W4] found it.
Run: python stream_runs.py [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""

import functools
import importlib
import inspect
import io
import itertools
import operator
import os
import sys
import tempfile
import traceback
import warnings

import torch

SPEC = sys.argv[1] if len(sys.argv) > 1 else 'sampler_conformance.adapters.hf_datasets:split_by_node'  # or another dataset factory, to compare
N, W, EPOCH = 12, 4, 0
OPTIONS = {'seed': 379, 'shuffle': True, 'num_shards': 7, 'shards': (range(0, 2), range(2, 4), range(4, 6), range(6, 8), range(8, 10), range(10, 11), range(11, 12)), 'batch_size': 1}  # those the factory takes are given (workdir: a fresh folder the ranks share)
LOADER = {'num_workers': 3, 'batch_size': 1, 'drop_last': False, 'persistent_workers': False}  # the DataLoader the suite put over each rank's dataset
LOADER_SEEDS = [9255065599715869544, 6565717187226468691, 5981620180015098184, 5572833314935535880]  # each rank's DataLoader generator: its workers' seeds, as the suite drew them
STREAMS = W * max(LOADER["num_workers"], 1)  # the (rank, worker) pairs that read the data
LIMIT = 112  # a rank that yields more items than this never stops
FIRST_CUT = 1
SECOND_CUT = 1


def load(spec):
    """The sampler or factory MODULE:ATTR (or FILE.py:ATTR) names."""
    where, _, attr = spec.rpartition(":")
    if where.endswith(".py"):  # imported from its folder, as python FILE.py runs it
        sys.path.insert(0, os.path.dirname(os.path.abspath(where)))
        where = os.path.basename(where)[:-3]
    else:  # as python -m does: the module may lie in this folder
        sys.path.insert(0, os.getcwd())
    return functools.reduce(getattr, attr.split("."), importlib.import_module(where))


class NoId(TypeError):
    """An item without an id the suite can read."""


def item_id(item):
    """The id an item carries: an int (or a 0-d integer tensor), alone, under "id", or first in a tuple."""
    carrier = item["id"] if isinstance(item, dict) else item[0] if isinstance(item, (tuple, list)) else item
    try:
        if isinstance(carrier, bool):
            raise TypeError
        return operator.index(carrier)
    except TypeError:
        raise NoId(f"yielded a {type(carrier).__name__} {carrier!r} as an item's id (in {item!r})") from None


def collate(items):
    """A batch as the suite's DataLoader made it: the worker that read it (-1: the rank's own process), its items."""
    info = torch.utils.data.get_worker_info()
    return -1 if info is None else info.id, items


def taken(options):
    """Of ``options``, those the factory names (all of them, where it takes **kwargs)."""
    parameters = inspect.signature(Factory).parameters
    if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        return options
    return {name: value for name, value in options.items() if name in parameters}


def build(rank, **changes):
    """Rank ``rank``'s dataset, built as the suite built it (``changes`` in place of OPTIONS' own)."""
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(W))  # as torchrun exports them
    return Factory(N, rank=rank, world_size=W, **taken({**OPTIONS, "workdir": WORKDIR, **changes}))


def read(dataset, rank, loader_seed, epochs=(EPOCH,), **loader):
    """``dataset`` read through one DataLoader (``loader`` in place of LOADER's own), set_epoch(e)
    before each epoch e, as the suite read it: each epoch's batches, as (worker, ids)."""
    generator = torch.Generator().manual_seed(loader_seed)
    loader = torch.utils.data.DataLoader(dataset, collate_fn=collate, generator=generator, **{**LOADER, **loader})
    readings = []
    for epoch in epochs:
        if epoch is not None and callable(getattr(dataset, "set_epoch", None)):
            dataset.set_epoch(epoch)
        batches, items = [], 0
        for worker, batch in loader:
            batches.append((worker, [item_id(item) for item in batch]))
            items += len(batch)
            if items > LIMIT:
                break
        readings.append(batches)
    return readings


def epoch_of(rank, **changes):
    """Rank ``rank``'s dataset built and read for the epoch EPOCH as the suite did: its batches, as (worker, ids)."""
    return read(build(rank, **changes), rank, LOADER_SEEDS[rank])[0]


def ids_of(batches):
    return [i for _, batch in batches for i in batch]


def short(values):
    """A list, its middle left out where it is long."""
    values = list(values)
    if len(values) <= 16:
        return str(values)
    return f"{str(values[:12])[:-1]}, ... {len(values) - 16} more ..., {str(values[-4:])[1:]}"


if __name__ == "__main__":
    Factory = load(SPEC)
    WORKDIR = tempfile.mkdtemp(prefix="layout-")
    # Found in real process groups; read here in one process, rank after rank.
    from torchdata.stateful_dataloader import StatefulDataLoader


    def stateful(rank, state=None):
        """A fresh dataset for rank ``rank`` and a StatefulDataLoader over it, given ``state`` if any."""
        dataset = build(rank)
        generator = torch.Generator().manual_seed(LOADER_SEEDS[rank])
        loader = StatefulDataLoader(dataset, collate_fn=collate, generator=generator, **LOADER)
        if state is not None:
            loader.load_state_dict(state)
        return dataset, loader


    def take(batches, count=None):
        """The ids of the next ``count`` batches (None: to the epoch's end) of a loader or its iterator."""
        return [[item_id(i) for i in items] for _, items in itertools.islice(batches, LIMIT + 1 if count is None else count)]


    def set_epoch(dataset, epoch):
        if callable(getattr(dataset, "set_epoch", None)):
            dataset.set_epoch(epoch)


    def started(rank, state, epoch):
        """A fresh dataset and loader (given ``state``, if any), set to ``epoch``, and the loader's iterator."""
        dataset, loader = stateful(rank, state)
        set_epoch(dataset, epoch)
        return dataset, loader, iter(loader)


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


    def checkpoint(loader):
        """loader.state_dict() as a checkpoint file carries it; where it cannot, the state itself and why."""
        return through_checkpoint(loader.state_dict())


    def runs(rank):
        """Rank ``rank``'s epochs EPOCH and EPOCH + 1 uninterrupted, and as the resumed runs read them."""
        dataset, loader = stateful(rank)
        whole = []
        for epoch in (EPOCH, EPOCH + 1):
            set_epoch(dataset, epoch)
            whole.append(take(loader))
        ended = FIRST_CUT is None  # checkpoint 1 at the end of epoch EPOCH: the resumed epoch is the next
        _, loader, batches = started(rank, None, EPOCH)
        first = take(batches, None if ended else min(FIRST_CUT, len(whole[0])))
        state1, why1 = checkpoint(loader)
        del batches, loader  # the interrupted run's workers stop here
        dataset, loader, batches = started(rank, state1, EPOCH + ended)
        resumed = take(batches, min(SECOND_CUT, len(whole[ended]) - (0 if ended else len(first))))
        state2, why2 = checkpoint(loader)
        rest = take(batches)
        if not ended:
            set_epoch(dataset, EPOCH + 1)
        after = resumed + rest if ended else take(loader)
        del batches, loader
        again = take(started(rank, state2, EPOCH + ended)[2])
        once = first if ended else first + resumed + rest
        return whole, once, ([] if ended else first) + resumed + again, after, why1 or why2


    warnings.filterwarnings("ignore", message=".*set_vital.*")  # torchdata 0.11 calls it, deprecated in torch
    print(f"{SPEC}: N={N}, W={W}, {OPTIONS}, StatefulDataLoader({LOADER})")
    print(f"checkpoint 1 after {FIRST_CUT} batches of epoch {EPOCH} (None: at its end), checkpoint 2 after {SECOND_CUT} more")
    fault = ""
    for r in range(W):
        try:
            whole, once, twice, after, why = runs(r)
        except Exception as exc:  # the dataset's own: built, set to its epoch, read, checkpointed or resumed
            fault = f"rank {r}: {type(exc).__name__}: {exc}"
            traceback.print_exc(file=sys.stdout)
            break
        print(f"rank {r}: uninterrupted {short(whole[0])}, then {short(whole[1])}; resumed once {short(once)}")

    # The promise: every rank's dataset is built, read, checkpointed and resumed through its StatefulDataLoader without raising.
    broken = bool(fault)
    shown = fault

    if broken:
        print('FAILED [dataset fault] rank 0: the dataset raised IndexError while iterating StatefulDataLoader(num_workers=3, persistent_workers=False): Caught IndexError in DataLoader worker process 0.')
        print(f"here: {shown}")
        sys.exit(1)
    print("held: every rank's dataset is built, read, checkpointed and resumed through its StatefulDataLoader without raising.")
