"""Reproduction scripts of an index sampler's failures found in real process groups: the ranks
read in W processes of one gloo group (``common/repro_groups.py``), each building its sampler
as the suite builds it there (from the group: ``num_replicas`` and ``rank`` left out), the
promise asserted over the readings in the script's own process.

Covered: the invariants only a group judges, each with a reading of its own (``GROUP_ONLY``:
the group's defaults, the contract's defaults, a DataLoader in every rank, the ranks' counts
after a resume, a resume through torchdata's StatefulDataLoader, the order each process
builds as the only rank (each rank a fresh interpreter with its own hash seed, in one group:
``IN_FRESH_GROUP``), and on a device mesh the ranks of one replica, every mesh rank a
process); the per-epoch invariants of ``repro_snippets`` that read every rank once
(``READ_ONCE``), found in a group (an order each process makes its own, or a sampler that
takes its rank from the group), a one-rank order built in rank 0's process; and the new
ranks' counts after a change of world size, read in one process (``AS_IN_GROUPS``). Other
invariants found on a mesh raise CannotReproduce, saying why."""

from __future__ import annotations

from collections.abc import Mapping
from string import Template
from typing import Any

from sampler_conformance.core.subject import CannotReproduce
from sampler_conformance.execution.mesh import MeshLayout
from sampler_conformance.subjects.common.repro_groups import (
    GROUP_IMPORTS,
    GROUP_TRIES,
    PROCESS_IMPORTS,
    RANKS_FAILED,
    fresh_processes,
    guarded,
    process_hash_seeds,
    run_ranks,
)
from sampler_conformance.subjects.common.repro_mesh import mesh_layout, mesh_values
from sampler_conformance.subjects.common.repro_script import drawn, tail

from .case import IndexCase
from .contracts import SamplerContract
from .order_checks import PER_PROCESS_STATE
from .plug import SamplerPlug
from .repro_group_readings import GROUP_ONLY, LOADER_OF_BATCH_SAMPLER, LOADER_OF_SAMPLER, ON_MESH, GroupReading
from .repro_resume import ELASTIC
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
# ... of a snippet that reads the sampler built as the only rank too: built in rank 0's process,
# as the suite's check builds it there (a sampler that takes its rank from the group whatever
# it is given shows it there only).
ONE_RANK_READING = '''def read_in_group(world, rank):
    """This rank's sampler, built from the group, read once: (indices, len() before, len() after);
    in rank 0's process also the sampler built as the only rank (num_replicas=1, rank=0), read once."""
    return read(world, rank, from_group()), read(1, 0) if rank == 0 else None'''
PRINT_ONE_RANK = (
    "ranks, ALONE = [reading for reading, _ in ranks], ranks[0][1]  # ALONE: rank 0's one-rank reading\n" + PRINT_ONCE
)


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
    {
        "replicas_read_alike",
        "group_defaults",
        "defaults",
        "loader_yields_sampler",
        "resumes_through_loader",
        "agrees_across_ranks",
    }
)
# The order each process builds as the only rank (agrees_across_ranks), where the suite found it
# depends on per-process state (its words say so, PER_PROCESS_STATE), is read in fresh processes,
# as torchrun starts a job's, each with the hash seed the suite gave it, joined in one gloo group
# (fresh_group_ranks: common/repro_groups.FRESH_PROCESSES, then this): a fork of the script
# shares its hash seed and its global RNGs, and an order seeded by hash() of a str agrees there.
# Elsewhere its ranks are forked, the spec imported already: funasr's import alone takes 20 s a
# process, and four at once passed the script's bound. {failed} and {tries} are filled in; {{ }} stays a brace.
IN_FRESH_GROUP = '''NOT_JOINED = "could not join the group"  # a process's reading where gloo did not connect


def in_fresh_group(rank):
    """In the fresh process of ``rank``: it joins the gloo group (a file rendezvous in the folder
    run_ranks made), reads its rank (read_in_group) and leaves the group."""
    try:
        torch.distributed.init_process_group("gloo", init_method=f"file://{{os.environ['REPRO_GROUP_FOLDER']}}/rendezvous",
                                             rank=rank, world_size=W, timeout=datetime.timedelta(seconds=TIMEOUT_S))
    except Exception as exc:  # the group did not form (gloo's sockets, on a busy machine): started again
        return {{NOT_JOINED: f"{{type(exc).__name__}}: {{exc}}"}}
    try:
        return read_in_group(W, rank)
    finally:
        torch.distributed.destroy_process_group()


def run_ranks(world):
    """Every rank's reading, each rank a fresh process of one gloo group (started again, twice
    at most, where it did not form)."""
    for _ in range({tries}):  # gloo's mesh fails to connect now and then on a busy machine: started again
        os.environ["REPRO_GROUP_FOLDER"] = tempfile.mkdtemp()  # the processes inherit it
        try:
            readings = start_processes(range(world))
        finally:
            shutil.rmtree(os.environ.pop("REPRO_GROUP_FOLDER"), ignore_errors=True)
        apart = [(r, reading[NOT_JOINED]) for r, reading in enumerate(readings) if isinstance(reading, dict)]
        if not apart:
            return readings
    for r, why in apart:
        print(f"rank {{r}} could not join the group: {{why}}")
    sys.exit({failed})


if RANK_OF_PROCESS:  # a process the script started: its reading, and no more
    in_process_of_rank(in_fresh_group)'''
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
        once = SNIPPETS[flag]
        if once.one_rank and plug.needs_process_group:
            raise CannotReproduce("the sampler takes its rank from the group: it cannot be built as the only rank")
        # Its one-rank reading, where it reads one, made in rank 0's process (ONE_RANK_READING).
        filled = snippet(once, contract, case, record, plug.world_size_name, alone="ALONE")
        reading = GroupReading(
            ONE_RANK_READING if once.one_rank else ONE_READING,
            PRINT_ONE_RANK if once.one_rank else PRINT_ONCE,
            filled.promise,
            filled.code,
            filled.imports,
        )
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
    fresh = flag == "agrees_across_ranks" and PER_PROCESS_STATE in record["message"] and layout is None
    text = SCRIPT.format(
        from_group=FROM_GROUP.substitute({"pass": one_pass}),
        read_in_group=reading.reading,
        run_ranks=fresh_group_ranks(case.world_size) if fresh else run_ranks(),
        main=guarded(main),
    )
    return text, (*reading.imports, *GROUP_IMPORTS, *(PROCESS_IMPORTS if fresh else ()))


def fresh_group_ranks(world_size: int) -> str:
    """The script's ``run_ranks(world)``, each rank a fresh process of one gloo group
    (:data:`IN_FRESH_GROUP`), with the hash seed the suite gave its process."""
    seeds = f"HASH_SEEDS = {process_hash_seeds(world_size)}  # each rank's process's PYTHONHASHSEED, as the suite gave them\n"
    return seeds + fresh_processes() + "\n\n\n" + IN_FRESH_GROUP.format(failed=RANKS_FAILED, tries=GROUP_TRIES)


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
        "drift_seed": drawn(record, "global seed"),  # test_ranks_agree_after_one_rank_drew_more_from_the_global_rngs
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
