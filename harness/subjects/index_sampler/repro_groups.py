"""Reproduction scripts of an index sampler's failures found in real process groups: the ranks
read in W processes of one gloo group (``common/repro_groups.py``), each building its sampler
as the suite builds it there (from the group: ``num_replicas`` and ``rank`` left out), the
promise asserted over the readings in the script's own process.

Covered: the invariants only a group judges, each with a reading of its own (``GROUP_ONLY``:
the group's defaults, the contract's defaults, a DataLoader in every rank, the ranks' counts
after a resume, a resume through torchdata's StatefulDataLoader, and on a device mesh the
ranks of one replica, every mesh rank a process); the per-epoch invariants of
``repro_snippets`` that read every rank once (``READ_ONCE``), found in a group (an order each
process makes its own, or a sampler that takes its rank from the group); and the new ranks'
counts after a change of world size, read in one process (``AS_IN_GROUPS``). Other invariants
found on a mesh raise CannotReproduce, saying why."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from string import Template
from typing import Any

from sampler_conformance.core.subject import CannotReproduce
from sampler_conformance.execution.mesh import MeshLayout
from sampler_conformance.subjects.common.repro_groups import GROUP_IMPORTS, guarded, run_ranks
from sampler_conformance.subjects.common.repro_mesh import APART, MESH, PROMISE, mesh_layout, mesh_values
from sampler_conformance.subjects.common.repro_script import drawn, tail

from .case import IndexCase
from .contracts import SamplerContract
from .plug import SamplerPlug
from .repro_resume import ELASTIC, HELPERS
from .repro_resume import IMPORTS as RESUME_IMPORTS
from .repro_snippets import READ_ONCE, SNIPPETS, Snippet, snippet
from .resume_labels import CHECKPOINT_LABEL

# Every rank's sampler as the suite builds it in a group, and one pass of it, taken by the head's
# take(): $pass is PASS, or PASS_OF_BATCHES for a sampler that yields batches (their items, as the
# suite reads them; repro_batches.TAKE_BATCHES defines items_of).
FROM_GROUP = Template('''def from_group(**options):
    """This rank's sampler built from the process group: num_replicas and rank left out."""
    return Sampler(DATASET, **{**OPTIONS, **options})


def one_pass(sampler, epoch=EPOCH):
    """set_epoch where the case has an epoch and the sampler a set_epoch, then one pass."""
    if epoch is not None and callable(getattr(sampler, "set_epoch", None)):
        sampler.set_epoch(epoch)
    return $pass''')
PASS = "take(sampler, LIMIT + 1)"
PASS_OF_BATCHES = "items_of(take(sampler, LIMIT + 1))"

ONE_READING = '''def read_in_group(world, rank):
    """This rank's sampler, built from the group, read once: (indices, len() before, len() after)."""
    return read(world, rank, from_group())'''
# READ_ONCE's print lines, its ranks read in the group.
PRINT_ONCE = READ_ONCE.partition("\n")[2]


@dataclass(frozen=True)
class GroupReading:
    reading: str  # read_in_group(world, rank), the rank's reading in its process
    printed: str  # the lines that print ``ranks``, the readings, in the script's process
    promise: str  # the one comment that states it
    code: str  # sets broken and shown
    imports: tuple[str, ...] = field(default=())


# replicas_read_alike, on the job's device mesh: every global rank's process reads once.
ON_MESH = GroupReading(
    MESH
    + '''


def read_in_group(world, rank):
    """This rank's sampler on the mesh, built as the suite builds it there, read once: given the
    mesh where it takes one, from the group where it takes its rank from there only, else told
    its data coordinate."""
    mesh = torch.distributed.device_mesh.init_device_mesh("cpu", MESH_SIZES, mesh_dim_names=MESH_NAMES)
    if "device_mesh" in inspect.signature(Sampler).parameters:
        return one_pass(from_group(device_mesh=mesh))
    if getattr(Sampler, "needs_process_group", False):
        return one_pass(from_group())
    return one_pass(build(W, DATA_RANKS[rank]))''',
    'print(f"{SPEC}: N={N}, W={W} data-parallel ranks on the mesh {dict(zip(MESH_NAMES, MESH_SIZES))}, epoch={EPOCH}, "\n'
    '      f"{OPTIONS}, in a gloo group of {len(DATA_RANKS)} processes")\n'
    "for r, indices in enumerate(ranks):\n"
    '    print(f"rank {r} (data rank {DATA_RANKS[r]}): {short(indices)}")\n',
    PROMISE,
    APART,
    imports=("inspect",),
)

GROUP_ONLY = {
    "replicas_read_alike": ON_MESH,  # filled in for the mesh (_on_mesh)
    "group_defaults": GroupReading(
        '''def read_in_group(world, rank):
    """This rank's sampler built from the group (num_replicas and rank left out), then with them given."""
    return one_pass(from_group()), one_pass(build(world, rank))''',
        'print(f"{SPEC}: N={N}, W={W}, epoch={EPOCH}, {OPTIONS}, in a gloo group of {W} processes")\n'
        "for r, (grouped, given) in enumerate(ranks):\n"
        '    print(f"rank {r}: from the group {short(grouped)}; num_replicas={W}, rank={r} given {short(given)}")\n',
        "left out, num_replicas and rank come from the process group: the same indices as given explicitly.",
        "wrong = [r for r, (grouped, given) in enumerate(ranks) if grouped != given]\n"
        "broken = bool(wrong)\n"
        'shown = "; ".join(f"rank {r} yields {short(ranks[r][0])} built from the group, {short(ranks[r][1])} with '
        'num_replicas={W}, rank={r}" for r in wrong[:2])',
    ),
    "defaults": GroupReading(
        '''def read_in_group(world, rank):
    """This rank's sampler built from the group with the contract's defaults given, then with the dataset alone."""
    return one_pass(from_group()), one_pass(Sampler(DATASET))''',
        'print(f"{SPEC}: N={N}, W={W}, epoch={EPOCH}, in a gloo group of {W} processes")\n'
        "for r, (given, alone) in enumerate(ranks):\n"
        '    print(f"rank {r}: with {OPTIONS} {short(given)}; with the dataset alone {short(alone)}")\n',
        "built with the dataset alone, Sampler(dataset), it yields what the contract's defaults ($defaults) give.",
        "wrong = [r for r, (given, alone) in enumerate(ranks) if given != alone]\n"
        "broken = bool(wrong)\n"
        'shown = "; ".join(f"rank {r} yields {short(ranks[r][0])} with the defaults given, {short(ranks[r][1])} '
        'with the dataset alone" for r in wrong[:2])',
    ),
    "resumed_ranks_agree": GroupReading(
        "K = $k  # items each rank read before its checkpoint (as drawn)\n"
        + HELPERS
        + '''def read_in_group(world, rank):
    """This rank, its samplers built from the group: the epoch's uninterrupted pass; then a fresh
    sampler's first K items and its state_dict(), through a checkpoint into another fresh one,
    which reads the rest of the pass."""
    seed_global_rngs()
    sampler = from_group()
    uninterrupted = one_pass(sampler)
    seed_global_rngs()
    sampler = from_group()
    set_epoch(sampler, EPOCH)
    taken = list(itertools.islice(iter(sampler), min(K, len(uninterrupted))))
    state, _ = through_checkpoint(sampler.state_dict())
    seed_global_rngs()
    sampler = from_group()
    sampler.load_state_dict(state)
    return uninterrupted, taken, one_pass(sampler)''',
        'print(f"{SPEC}: N={N}, W={W}, {OPTIONS}, epoch {EPOCH} interrupted after {K} items on each rank, in a gloo "\n'
        '      f"group of {W} processes")\n'
        "for r, (uninterrupted, taken, resumed) in enumerate(ranks):\n"
        '    print(f"rank {r}: uninterrupted {short(uninterrupted)}; before the checkpoint {short(taken)}; "\n'
        '          f"resumed {short(resumed)}")\n',
        "resumed after K items, the ranks' passes hold as many items as each other (they differ only as much as "
        "the uninterrupted passes do): a rank with more runs a step the others never join, and DDP hangs.",
        "whole = [len(uninterrupted) for uninterrupted, _, _ in ranks]\n"
        "rest = [len(resumed) for _, _, resumed in ranks]\n"
        "broken = max(rest) - min(rest) > max(whole) - min(whole)\n"
        'shown = f"resumed, the ranks\' passes hold {rest} items, where an uninterrupted pass holds {whole}"',
        imports=RESUME_IMPORTS,
    ),
    "resumes_through_loader": GroupReading(
        "$resume_constants\n"
        + HELPERS
        + '''$collate
def loader_over(sampler):
    """torchdata's StatefulDataLoader over the sampler, as the suite builds it."""
    from torchdata.stateful_dataloader import StatefulDataLoader

    return StatefulDataLoader(DATASET, $resume_loader_arguments, num_workers=NUM_WORKERS)


def batches(loader, limit=LIMIT + 1):
    return [batch.tolist() for batch in itertools.islice(loader, limit)]


def read_in_group(world, rank):
    """This rank, its samplers built from the group: epochs EPOCH and EPOCH + 1 through an uninterrupted
    loader; then K batches of EPOCH through a fresh one, its state_dict() through a checkpoint into
    another fresh sampler and loader (load_state_dict, then set_epoch), and the rest of both epochs."""
    seed_global_rngs()
    sampler = from_group()
    loader = loader_over(sampler)
    uninterrupted = []
    for epoch in (EPOCH, EPOCH + 1):
        set_epoch(sampler, epoch)
        uninterrupted.append(batches(loader))
    seed_global_rngs()
    sampler = from_group()
    loader = loader_over(sampler)
    set_epoch(sampler, EPOCH)
    iterator = iter(loader)
    taken = batches(iterator, min(K, len(uninterrupted[0])))
    state, _ = through_checkpoint(loader.state_dict())
    del iterator, loader  # the interrupted loader's workers stop here
    seed_global_rngs()
    sampler = from_group()
    loader = loader_over(sampler)
    loader.load_state_dict(state)
    resumed = []
    for epoch in (EPOCH, EPOCH + 1):
        set_epoch(sampler, epoch)
        resumed.append(batches(loader))
    return uninterrupted, taken, resumed''',
        'print(f"{SPEC}: N={N}, W={W}, {OPTIONS}, StatefulDataLoader($resume_loader_said, num_workers={NUM_WORKERS}), "\n'
        '      f"epoch {EPOCH} interrupted after {K} batches, in a gloo group of {W} processes")\n'
        "for r, (uninterrupted, taken, resumed) in enumerate(ranks):\n"
        '    print(f"rank {r}: uninterrupted {short(uninterrupted[0])}; before the checkpoint {short(taken)}; "\n'
        '          f"resumed {short(resumed[0])}; the next epoch {short(uninterrupted[1])}, resumed {short(resumed[1])}")\n',
        "resumed from loader.state_dict() after K batches, every rank's loader yields the rest of the "
        "uninterrupted loader's epoch, batch for batch, and then the same next epoch.",
        "wrong = []\n"
        "for r, (whole, taken, resumed) in enumerate(ranks):\n"
        "    if taken + resumed[0] != whole[0]:\n"
        '        wrong.append(f"rank {r} should go on with {short(whole[0][len(taken):])}, went on with {short(resumed[0])}")\n'
        "    elif resumed[1] != whole[1]:\n"
        '        wrong.append(f"rank {r}\'s next epoch should be {short(whole[1])}, was {short(resumed[1])}")\n'
        "broken = bool(wrong)\n"
        'shown = "; ".join(wrong[:2])',
        imports=RESUME_IMPORTS,
    ),
    "loader_yields_sampler": GroupReading(
        '''EPOCHS, NUM_WORKERS = $epochs, $num_workers
$batching
$collate

def read_in_group(world, rank):
    """Per epoch, as a training loop: a twin of the sampler, built alike, set to the epoch and
    read once; then the sampler set to it and read once through a DataLoader."""
    sampler, twin = from_group(), from_group()
    loader = torch.utils.data.DataLoader(DATASET, $loader_arguments, num_workers=NUM_WORKERS)
    epochs = []
    for epoch in EPOCHS:
        own = one_pass(twin, epoch)
        if callable(getattr(sampler, "set_epoch", None)):
            sampler.set_epoch(epoch)
        epochs.append((own, [batch.tolist() for batch in itertools.islice(loader, LIMIT + 1)]))
    return epochs''',
        'print(f"{SPEC}: N={N}, W={W}, {OPTIONS}, DataLoader($loader_said, num_workers={NUM_WORKERS}), in a gloo "\n'
        '      f"group of {W} processes")\n'
        "for r, epochs in enumerate(ranks):\n"
        "    for epoch, (own, batches) in zip(EPOCHS, epochs):\n"
        '        print(f"rank {r}, set_epoch({epoch}): the sampler {short(own)}; the DataLoader {short(batches)}")\n',
        "a DataLoader over the sampler yields the sampler's own indices, in order$loader_promise.",
        "wrong = []\n"
        "for r, epochs in enumerate(ranks):\n"
        "    for epoch, (own, batches) in zip(EPOCHS, epochs):\n"
        "        $expected\n"
        "        got = [i for batch in batches for i in batch]\n"
        "        if got != expected$sizes_differ:\n"
        "            wrong.append((r, epoch, expected, got))\n"
        "broken = bool(wrong)\n"
        'shown = "; ".join(f"rank {r}, set_epoch({epoch}): the sampler yields {short(expected)}, the DataLoader '
        '{short(got)}" for r, epoch, expected, got in wrong[:2])',
        imports=("torch",),
    ),
}

# How the DataLoader of loader_yields_sampler (and resumes_through_loader's StatefulDataLoader)
# batches: with its own batch size (and drop_last)...
LOADER_OF_SAMPLER = {
    "loader_arguments": "batch_size=BATCH_SIZE, sampler=sampler, drop_last=LOADER_DROP_LAST",
    "loader_said": "batch_size={BATCH_SIZE}, drop_last={LOADER_DROP_LAST}",
    "resume_loader_arguments": "sampler=sampler, batch_size=BATCH_SIZE",
    "resume_loader_said": "batch_size={BATCH_SIZE}",
    "collate": "\n",
    "loader_promise": " (cut to whole batches under drop_last), in batches of BATCH_SIZE but the last",
    "expected": "expected = own[: len(own) // BATCH_SIZE * BATCH_SIZE] if LOADER_DROP_LAST else own",
    "sizes_differ": " or any(len(batch) != BATCH_SIZE for batch in batches[:-1])",
}
# ... or, over a sampler that yields batches, as batch_sampler= (scenarios/loader.py).
LOADER_OF_BATCH_SAMPLER = {
    "batching": "# the sampler makes the batches: the DataLoader takes it as batch_sampler=",
    "loader_arguments": "batch_sampler=sampler, collate_fn=collate",
    "loader_said": "batch_sampler=sampler",
    "resume_loader_arguments": "batch_sampler=sampler, collate_fn=collate",
    "resume_loader_said": "batch_sampler=sampler",
    "collate": '''
def collate(items):
    """A batch as default_collate makes it, but an empty one stays empty, as the suite's loaders collate."""
    return torch.as_tensor(items, dtype=torch.int64)

''',
    "loader_promise": " (the items of its batches, one after another)",
    "expected": "expected = own",
    "sizes_differ": "",
}

# What a group only checks, read in one process where it was found on simulated ranks too: the
# new ranks' counts after a change of world size (repro_resume's ELASTIC reading).
AS_IN_GROUPS = {
    "elastic_ranks_agree": Snippet(
        "resumed on W' ranks, every new rank holds as many items as the others: one with more runs a step the "
        "others never join, and DDP hangs.",
        "counts = [len(share) for share in rest]\n"
        "broken = max(counts) - min(counts) > 0\n"
        'shown = f"the new ranks hold {counts} items"',
        reading=ELASTIC,
        imports=RESUME_IMPORTS,
    ),
}

# The flags read at a resume's epoch, which is drawn apart from the case's (resume_draws.drawn).
RESUMED_IN_GROUPS = frozenset({"resumed_ranks_agree", "resumes_through_loader", *AS_IN_GROUPS})
# The group-only readings a script makes of a sampler that yields batches, as the suite does: a
# pass is the items of its batches (PASS_OF_BATCHES), a DataLoader takes it as batch_sampler=.
BATCHED_IN_GROUPS = frozenset(
    {"replicas_read_alike", "group_defaults", "defaults", "loader_yields_sampler", "resumes_through_loader"}
)
# Every flag whose failure found in a group a script reads in a group.
READ_IN_GROUPS = frozenset(GROUP_ONLY) | {flag for flag, found in SNIPPETS.items() if found.reading is READ_ONCE}

# What follows the in-process script's head up to its reading (repro.HEAD: the spec, the case,
# load, build, read, short).
SCRIPT = """Sampler = load(SPEC)  # here, and in every rank's process, which imports this file


{from_group}


{read_in_group}


{run_ranks}


{main}"""
MAIN = """ranks = run_ranks({world})
{printed}
# The promise: {promise}
{code}
{tail}"""


def group_script(
    plug: SamplerPlug, contract: SamplerContract, case: IndexCase, record: Mapping[str, Any]
) -> tuple[str, tuple[str, ...]]:
    """The script's text after its head (repro.py's, up to its reading) for ``record``, found
    in real groups, and the modules it imports; CannotReproduce where its reading is not one
    a group script makes."""
    flag = record["flag"]
    layout = mesh_layout(record)
    world = "W"
    if contract.yields_batches and flag not in BATCHED_IN_GROUPS:
        raise CannotReproduce(
            f"it was found in real process groups, where a script reads batches for {', '.join(sorted(BATCHED_IN_GROUPS))} only so far"
        )
    if layout is not None:
        reading = _on_mesh(layout)
        world = "len(DATA_RANKS)"
    elif flag in GROUP_ONLY:
        found = GROUP_ONLY[flag]
        values = _values(contract, case, record)

        def fill(text: str) -> str:
            return Template(text).substitute(values)

        reading = GroupReading(
            fill(found.reading), fill(found.printed), fill(found.promise), fill(found.code), found.imports
        )
    elif flag in SNIPPETS and SNIPPETS[flag].reading is READ_ONCE:
        if SNIPPETS[flag].one_rank and plug.needs_process_group:
            raise CannotReproduce("the sampler takes its rank from the group: it cannot be built as the only rank")
        filled = snippet(SNIPPETS[flag], contract, case, record, plug.world_size_name)
        reading = GroupReading(ONE_READING, PRINT_ONCE, filled.promise, filled.code, filled.imports)
    else:
        raise CannotReproduce(
            f"{flag} was found in real process groups only, and its reading there is not scripted yet"
        )
    main = MAIN.format(
        world=world,
        printed=reading.printed.rstrip("\n"),
        promise=reading.promise,
        code=reading.code,
        tail=tail(record, reading.promise),
    )
    one_pass = PASS_OF_BATCHES if contract.yields_batches else PASS
    text = SCRIPT.format(
        from_group=FROM_GROUP.substitute({"pass": one_pass}),
        read_in_group=reading.reading,
        run_ranks=run_ranks(),
        main=guarded(main),
    )
    return text, (*reading.imports, *GROUP_IMPORTS)


def _on_mesh(layout: MeshLayout) -> GroupReading:
    """ON_MESH for ``layout``: its sizes, names and each global rank's data coordinate."""
    return GroupReading(
        Template(ON_MESH.reading).substitute(mesh_values(layout)),
        ON_MESH.printed,
        ON_MESH.promise,
        ON_MESH.code,
        ON_MESH.imports,
    )


def _values(contract: SamplerContract, case: IndexCase, record: Mapping[str, Any]) -> dict[str, Any]:
    """What a GROUP_ONLY template's ``$name`` stands for: the contract's, the case's, and what the test drew."""
    epochs = drawn(record, "epochs")
    loader_drop_last = drawn(record, "DataLoader drop_last")
    if record["flag"] == "loader_yields_sampler" and (epochs is None or loader_drop_last is None):
        raise CannotReproduce(
            "the failing test's record holds no epochs or DataLoader drop_last: nothing to build again"
        )
    loader_k = drawn(record, "k (batches before the checkpoint)")
    num_workers = 2 if "with_workers" in str(record.get("test", "")) else 0
    return {
        "k": drawn(record, CHECKPOINT_LABEL),
        "global_seed": drawn(record, "global RNG seed") or 0,  # the resume readings' (repro_resume.SEEDED)
        "loader_k": loader_k,
        "defaults": ", ".join(f"{name}={value!r}" for name, value in contract.defaults),
        "epochs": epochs,
        "loader_drop_last": loader_drop_last,
        "batch_size": case.batch_size,
        "num_workers": num_workers,
        "batching": f"BATCH_SIZE, LOADER_DROP_LAST = {case.batch_size}, {loader_drop_last}  # the DataLoader's (as drawn)",
        "resume_constants": f"K, NUM_WORKERS = {loader_k}, {num_workers}  # batches before the checkpoint (as drawn)"
        + ("" if contract.yields_batches else f"\nBATCH_SIZE = {case.batch_size}  # the loader's"),
        **(LOADER_OF_BATCH_SAMPLER if contract.yields_batches else LOADER_OF_SAMPLER),
    }
