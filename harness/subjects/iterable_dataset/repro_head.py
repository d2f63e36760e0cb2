"""The head of a streaming dataset's reproduction script (docs/reproductions.md), up to its
reading: the spec and the case, the DataLoader the suite put over each rank's dataset and its
workers' seeds, loading the factory, reading an item's id as the suite reads it, building a
rank's dataset as the suite built it (RANK and WORLD_SIZE exported as torchrun exports them)
and reading it through a real DataLoader, each batch tagged with the worker that read it.
Every stream script starts so: those read in one process (``repro.py``) and those that read the
ranks in processes of their own (``repro_groups.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sampler_conformance.subjects.common.reading import read_limit
from sampler_conformance.subjects.common.repro_script import LOAD, SHORT, TAKEN, docstring, imports, script_spec

from .case import StreamCase
from .plug import StreamPlug
from .repro_snippets import loader_seeds

# {name} is filled in, {{ }} stays a brace.
HEAD = """{docstring}

{imports}

SPEC = sys.argv[1] if len(sys.argv) > 1 else {spec!r}  # or another dataset factory, to compare
N, W, EPOCH = {n}, {w}, {epoch}
OPTIONS = {options!r}  # those the factory takes are given (workdir: a fresh folder the ranks share)
LOADER = {loader!r}  # the DataLoader the suite put over each rank's dataset
LOADER_SEEDS = {seeds!r}  # each rank's DataLoader generator: its workers' seeds, as the suite drew them
STREAMS = W * max(LOADER["num_workers"], 1)  # the (rank, worker) pairs that read the data
LIMIT = {limit}  # a rank that yields more items than this never stops
{constants}

{load}


class NoId(TypeError):
    \"\"\"An item without an id the suite can read.\"\"\"


def item_id(item):
    \"\"\"The id an item carries: an int (or a 0-d integer tensor), alone, under "id", or first in a tuple.\"\"\"
    carrier = item["id"] if isinstance(item, dict) else item[0] if isinstance(item, (tuple, list)) else item
    try:
        if isinstance(carrier, bool):
            raise TypeError
        return operator.index(carrier)
    except TypeError:
        raise NoId(f"yielded a {{type(carrier).__name__}} {{carrier!r}} as an item's id (in {{item!r}})") from None


def collate(items):
    \"\"\"A batch as the suite's DataLoader made it: the worker that read it (-1: the rank's own process), its items.\"\"\"
    info = torch.utils.data.get_worker_info()
    return -1 if info is None else info.id, items


{taken}


def build(rank, **changes):
    \"\"\"Rank ``rank``'s dataset, built as the suite built it (``changes`` in place of OPTIONS' own).\"\"\"
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(W))  # as torchrun exports them
    return Factory(N, rank=rank, world_size=W, **taken({{**OPTIONS, "workdir": WORKDIR, **changes}}))


def read(dataset, rank, loader_seed, epochs=(EPOCH,), **loader):
    \"\"\"``dataset`` read through one DataLoader (``loader`` in place of LOADER's own), set_epoch(e)
    before each epoch e, as the suite read it: each epoch's batches, as (worker, ids).\"\"\"
    generator = torch.Generator().manual_seed(loader_seed)
    loader = torch.utils.data.DataLoader(dataset, collate_fn=collate, generator=generator, **{{**LOADER, **loader}})
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
    \"\"\"Rank ``rank``'s dataset built and read for the epoch EPOCH as the suite did: its batches, as (worker, ids).\"\"\"
    return read(build(rank, **changes), rank, LOADER_SEEDS[rank])[0]


def ids_of(batches):
    return [i for _, batch in batches for i in batch]


{short}


"""


def script_head(
    plug: StreamPlug,
    record: Mapping[str, Any],
    filename: str,
    case: StreamCase,
    constants: Mapping[str, Any],
    more_imports: tuple[str, ...],
) -> str:
    """:data:`HEAD` for ``case`` (the one read), with ``constants`` (the reading's own) written in."""
    spec = script_spec(plug)
    options = {name: value for name, value in case.factory_options("").items() if name != "workdir"}
    loader: dict[str, Any] = {
        "num_workers": case.num_workers,
        "batch_size": case.batch_size,
        "drop_last": case.drop_last,
    }
    if case.num_workers:
        loader["persistent_workers"] = case.persistent_workers
    return HEAD.format(
        docstring=docstring(record, spec, filename),
        imports=imports(("inspect", "operator", "tempfile", "torch", *more_imports)),
        spec=spec,
        n=case.dataset_size,
        w=case.world_size,
        epoch=case.epoch,
        options=options,
        loader=loader,
        seeds=loader_seeds(case),
        limit=read_limit(case.dataset_size),
        constants="".join(f"{name} = {value!r}\n" for name, value in constants.items()),
        load=LOAD,
        taken=TAKEN.format(),
        short=SHORT,
    )
