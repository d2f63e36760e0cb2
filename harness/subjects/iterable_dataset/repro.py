"""A plain-Python script that reproduces one counterexample of a streaming dataset's epoch
without the suite (docs/reproductions.md): it imports the factory the spec names (and torch),
builds every rank's dataset of the case with the arguments the suite built it with (the
layout's folder a fresh one, RANK and WORLD_SIZE exported as torchrun exports them), reads
each through a real DataLoader as the suite read it (the same workers, batches and worker
seeds), asserts the promise, prints the suite's words and exits 1 while the bug is there.

Covered: the invariants of one epoch of every rank (``SNIPPETS``) and a fault charged to
``stream_runs`` where the dataset raised, found on simulated ranks, of a factory that takes
its rank as told. The rest raise :class:`CannotReproduce`, saying why."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sampler_conformance.core.contracts import Contract
from sampler_conformance.core.subject import CannotReproduce, Plug
from sampler_conformance.subjects.common.reading import read_limit
from sampler_conformance.subjects.common.repro_script import (
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


{load}


def item_id(item):
    \"\"\"The id an item carries: the item itself, its "id", or its first element.\"\"\"
    if isinstance(item, dict):
        item = item["id"]
    elif isinstance(item, (tuple, list)):
        item = item[0]
    return item.item() if isinstance(item, torch.Tensor) else int(item)


{taken}


def read(rank):
    \"\"\"Rank ``rank``'s dataset, built and read through its DataLoader as the suite read it: its batches of ids.\"\"\"
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(W))  # as torchrun exports them
    dataset = Factory(N, rank=rank, world_size=W, **taken({{**OPTIONS, "workdir": WORKDIR}}))
    if EPOCH is not None and callable(getattr(dataset, "set_epoch", None)):
        dataset.set_epoch(EPOCH)
    generator = torch.Generator().manual_seed(LOADER_SEEDS[rank])
    loader = torch.utils.data.DataLoader(dataset, collate_fn=list, generator=generator, **LOADER)
    batches, items = [], 0
    for batch in loader:
        batches.append([item_id(item) for item in batch])
        items += len(batch)
        if items > LIMIT:
            break
    return batches


{short}


"""
# The script's main part, run only as __main__: a DataLoader's workers started by forkserver or
# spawn (macOS, Python 3.14) import the script again, and must not read again.
MAIN = """Factory = load(SPEC)
WORKDIR = tempfile.mkdtemp(prefix="layout-")
{reading}
# The promise: {promise}
{code}
{tail}"""

# How the script reads the ranks: each rank's batches of ids, and every id counted.
READ_ALL = """ranks = [read(r) for r in range(W)]
print(f"{SPEC}: N={N}, W={W}, epoch={EPOCH}, {OPTIONS}, DataLoader({LOADER})")
for r, batches in enumerate(ranks):
    ids = [i for batch in batches for i in batch]
    print(f"rank {r} ({len(batches)} batches, {len(ids)} items): {short(ids)}")
counts = collections.Counter(i for batches in ranks for batch in batches for i in batch)
missing = [i for i in range(N) if not counts[i]]
repeated = sorted(i for i, n in counts.items() if n > 1)
"""
# ... each rank in turn, up to the first that raises: its exception is the fault.
FAULT = """print(f"{SPEC}: N={N}, W={W}, epoch={EPOCH}, {OPTIONS}, DataLoader({LOADER})")
fault = ""
for r in range(W):
    try:
        batches = read(r)
    except Exception as exc:  # the dataset's own: in the factory, set_epoch, or its workers' reading
        fault = f"rank {r}: {type(exc).__name__}: {exc}"
        traceback.print_exc(file=sys.stdout)
        break
    ids = [i for batch in batches for i in batch]
    print(f"rank {r} ({len(batches)} batches, {len(ids)} items): {short(ids)}")
"""


@dataclass(frozen=True)
class Snippet:
    promise: str
    code: str  # sets broken and shown
    reading: str = READ_ALL
    imports: tuple[str, ...] = ("collections",)


SNIPPETS = {
    "stream_runs": Snippet(
        "every rank's dataset is built, set to its epoch and read through its DataLoader without raising.",
        "broken = bool(fault)\nshown = fault",
        reading=FAULT,
        imports=("traceback",),
    ),
    "exactly_once": Snippet(
        "every id of range(N) is read exactly once in the epoch, all (rank, worker) pairs together.",
        "broken = bool(missing or repeated)\n"
        'shown = f"never read: {short(missing)}; read more than once: {short(repeated)}"',
    ),
    "mix_read_once": Snippet(
        "no id is read twice in the epoch, all (rank, worker) pairs together.",
        'broken = bool(repeated)\nshown = f"read more than once: {short(repeated)}"',
    ),
    "padded_once": Snippet(
        "every id is read, and fewer than W x workers = STREAMS items repeat others.",
        "repeats = sum(n - 1 for n in counts.values())\n"
        "broken = bool(missing) or repeats >= STREAMS\n"
        'shown = f"never read: {short(missing)}; {repeats} items repeat others, where fewer than {STREAMS} may"',
    ),
    "truncated_once": Snippet(
        "no id is read twice, and fewer than W x workers = STREAMS ids are dropped.",
        "broken = bool(repeated) or len(missing) >= STREAMS\n"
        'shown = f"read more than once: {short(repeated)}; {len(missing)} dropped, where fewer than {STREAMS} may"',
    ),
    "even_batches": Snippet(
        "N fills every rank's workers' batches exactly here, so every rank runs the same number of batches.",
        'broken = len({len(batches) for batches in ranks}) > 1\nshown = f"batches per rank: {[len(b) for b in ranks]}"',
    ),
}


def script_for(plug: Plug, contract: Contract, record: Mapping[str, Any], filename: str) -> str:
    """The script that reproduces ``record``, to be saved as ``filename``; CannotReproduce says why not."""
    assert isinstance(plug, StreamPlug) and isinstance(contract, StreamContract)
    if plug.needs_process_group or plug.takes_mesh:
        raise CannotReproduce("the dataset takes its rank from the process group or a device mesh")
    if record.get("in_groups"):
        raise CannotReproduce("it was found in real process groups only, which scripts do not reproduce yet")
    found = snippet_for(record, SNIPPETS, FAULT, "dataset")
    case = StreamCase.from_parameters(record["parameters"])
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
        imports=imports(("inspect", "tempfile", "torch", *found.imports)),
        spec=spec,
        n=case.dataset_size,
        w=case.world_size,
        epoch=case.epoch,
        options=options,
        loader=loader,
        seeds=[case.loader_seed(rank, reading=0) for rank in range(case.world_size)],
        limit=read_limit(case.dataset_size),
        load=LOAD,
        taken=TAKEN.format(),
        short=SHORT,
    )
    main = MAIN.format(reading=found.reading, promise=found.promise, code=found.code, tail=tail(record, found.promise))
    return head + 'if __name__ == "__main__":\n' + textwrap.indent(main, "    ")
