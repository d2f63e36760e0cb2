"""A plain-Python script that reproduces one counterexample of a streaming dataset's epoch
without the suite (docs/reproductions.md): it imports the factory the spec names (and torch),
builds every rank's dataset of the case with the arguments the suite built it with (the
layout's folder a fresh one, RANK and WORLD_SIZE exported as torchrun exports them), reads
each through a real DataLoader as the suite read it (the same workers, batches and worker
seeds), asserts the promise, prints the suite's words and exits 1 while the bug is there.

Covered (``SNIPPETS``): the invariants of one epoch of every rank and a fault charged to
``stream_runs`` where the dataset raised (``repro_snippets.py``); the order invariants and the
readings by another number of workers or by persistent ones (``repro_order.py``); a mix's
frequencies and pairs (``repro_mix.py``); the ``+resumable`` protocol through torchdata's
StatefulDataLoader (``repro_resume.py``). Found on simulated ranks, or in real groups where one process, reading rank
after rank through real DataLoaders, shows it too; of a factory that takes its rank as told.
The rest raise :class:`CannotReproduce`, saying why."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

from sampler_conformance.core.contracts import Contract
from sampler_conformance.core.subject import CannotReproduce, Plug
from sampler_conformance.subjects.common.reading import read_limit
from sampler_conformance.subjects.common.repro_script import (
    IN_GROUPS,
    LOAD,
    SHORT,
    TAKEN,
    docstring,
    imports,
    script_spec,
    snippet_for,
    tail,
)

from .case import StreamCase
from .contracts import StreamContract
from .plug import StreamPlug
from .repro_mix import MIX_SNIPPETS
from .repro_order import ORDER_SNIPPETS
from .repro_resume import RESUME_SNIPPETS
from .repro_snippets import FAULT, ONE_EPOCH_SNIPPETS, loader_seeds

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
# The script's main part, run only as __main__: a DataLoader's workers started by forkserver or
# spawn (macOS, Python 3.14) import the script again, and must not read again.
MAIN = """Factory = load(SPEC)
WORKDIR = tempfile.mkdtemp(prefix="layout-")
{where}{reading}
# The promise: {promise}
{code}
{tail}"""

SNIPPETS = {**ONE_EPOCH_SNIPPETS, **ORDER_SNIPPETS, **MIX_SNIPPETS, **RESUME_SNIPPETS}
# The flags a reading in one process cannot show, and why.
NEEDS_PROCESSES = {
    "stream_agrees": "the ranks' processes disagree (a hash seed, say, that each Python process salts its own way): "
    "one process agrees with itself, so a script needs real process groups, a process per rank, which stream "
    "scripts do not start yet",
}


def scripted(contract: Contract) -> frozenset[str]:
    """The flags a script is written for, under every contract of the subject."""
    return frozenset(SNIPPETS)


def script_for(plug: Plug, contract: Contract, record: Mapping[str, Any], filename: str) -> str:
    """The script that reproduces ``record``, to be saved as ``filename``; CannotReproduce says why not."""
    assert isinstance(plug, StreamPlug) and isinstance(contract, StreamContract)
    if plug.needs_process_group or plug.takes_mesh:
        raise CannotReproduce(
            "the dataset takes its rank from the process group or a device mesh: its ranks are read only in real "
            "process groups, a process per rank, which stream scripts do not start yet"
        )
    if record["flag"] in NEEDS_PROCESSES:
        raise CannotReproduce(NEEDS_PROCESSES[record["flag"]])
    found = snippet_for(record, SNIPPETS, FAULT, "dataset")
    case, constants = found.setup(StreamCase.from_parameters(record["parameters"]), record)
    options = {name: value for name, value in case.factory_options("").items() if name != "workdir"}
    loader: dict[str, Any] = {
        "num_workers": case.num_workers,
        "batch_size": case.batch_size,
        "drop_last": case.drop_last,
    }
    if case.num_workers:
        loader["persistent_workers"] = case.persistent_workers
    spec = script_spec(plug)
    head = HEAD.format(
        docstring=docstring(record, spec, filename),
        imports=imports(("inspect", "operator", "tempfile", "torch", *found.imports)),
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
    promise = found.promise.format(**constants)  # the constants the reading adds, written in
    main = MAIN.format(
        where=IN_GROUPS if record.get("in_groups") else "",
        reading=found.read,
        promise=promise,
        code=found.code,
        tail=tail(record, promise),
    )
    return head + 'if __name__ == "__main__":\n' + textwrap.indent(main, "    ")
