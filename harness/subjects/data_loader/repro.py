"""A plain-Python script that reproduces one counterexample of a data loader without the suite
(docs/reproductions.md): it imports the factory the spec names (and torch), builds every rank's
loader of the case with the arguments the suite built it with (a fresh workdir a rank), calls its
epoch hook before each epoch and reads its batches' instance ids as the suite read them, asserts
the promise, prints the suite's words and exits 1 while the bug is there.

Covered: every invariant of the data loader's contracts: the one-epoch invariants, a fault
charged to ``loader_runs`` where the loader raised, ``loader_deterministic``,
``loader_reshuffles``, ``loader_same_global_batches``, the resume protocol (``state_dict()``
after k batches, ``load_state_dict`` into a fresh loader, the rest; the state saved and loaded as
a checkpoint file, ``loader_plain_state``), and under ``+mesh`` ``replicas_read_alike`` on the
mesh the test named, every global rank a process of one gloo group (``common/repro_mesh.py``).
Any other failure found in real process groups is read here in one process, rank after rank,
and the script says so: the loaders the suite certifies take their rank as told, so the nearest
in-process reading is the same reading, and the suite offers the script only where it fails
there too."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from string import Template
from typing import Any

from sampler_conformance.core.contracts import Contract
from sampler_conformance.core.subject import Plug
from sampler_conformance.subjects.common.reading import read_limit
from sampler_conformance.subjects.common.repro_groups import GROUP_IMPORTS, guarded, run_ranks
from sampler_conformance.subjects.common.repro_mesh import APART, MESH, PROMISE, mesh_layout, mesh_values
from sampler_conformance.subjects.common.repro_mesh import FLAG as MESH_FLAG
from sampler_conformance.subjects.common.repro_script import (
    FAULT_TEMPLATE,
    LOAD,
    SHORT,
    TAKEN,
    THROUGH_CHECKPOINT,
    TWICE_TEMPLATE,
    docstring,
    drawn,
    imports,
    main_part,
    script_spec,
    snippet_for,
    tail,
    written_in,
)

from .case import ELASTIC_WORLD_SIZES, LoaderCase
from .contracts import LoaderContract
from .plug import EPOCH_HOOKS, ID_KEYS, LoaderPlug

# {name} is filled in, {{ }} stays a brace.
HEAD = """{docstring}

{imports}

SPEC = sys.argv[1] if len(sys.argv) > 1 else {spec!r}  # or another data loader factory, to compare
N, W, B, EPOCH = {n}, {w}, {b}, {epoch}  # instances, DP ranks, global batch size, epoch
OPTIONS = {options!r}  # those the factory takes are given, and a fresh workdir a rank
LIMIT = {limit}  # a rank that yields more batches than this never stops


{load}


{taken}


def ids(batch):
    \"\"\"The instance ids a batch carries: the batch itself, or its {keys} entry.\"\"\"
    if isinstance(batch, dict):
        batch = next(batch[key] for key in {id_keys!r} if key in batch)
    return [int(i) for i in (batch.tolist() if hasattr(batch, "tolist") else batch)]


def build(world, rank, workdir):
    \"\"\"Rank ``rank``'s loader of DP size ``world``, as the suite built it.\"\"\"
    return Factory(N, dp_rank=rank, dp_world_size=world, global_batch_size=B, **taken({{**OPTIONS, "workdir": workdir}}))


def hook_of(loader):
    \"\"\"The loader's epoch hook, {hook_names}; None where it has neither.\"\"\"
    return next((getattr(loader, name) for name in {hooks!r} if callable(getattr(loader, name, None))), None)


def read_rank(world, rank, epochs):
    \"\"\"Rank ``rank``'s loader of DP size ``world``, built afresh, its epoch hook called before
    each of ``epochs`` (None: not called): per epoch, its batches' ids.\"\"\"
    with tempfile.TemporaryDirectory() as workdir:
        loader = build(world, rank, workdir)
        read = []
        for epoch in epochs:
            if epoch is not None and hook_of(loader) is not None:
                hook_of(loader)(epoch)
            read.append([ids(batch) for batch in itertools.islice(loader, LIMIT + 1)])
        return read


{short}


"""
SAID = "{SPEC}: N={N}, W={W}, global_batch_size={B}, epoch={EPOCH}, {OPTIONS}"  # the case, as the script prints it

# How the script reads the ranks: one epoch of every rank, each rank's batches.
ONE_EPOCH = """ranks = [read_rank(W, r, [EPOCH])[0] for r in range(W)]
for r, batches in enumerate(ranks):
    print(f"rank {r} ({len(batches)} batches): {short(batches)}")
"""
# ... each rank in turn, up to the first that raises: its exception is the fault.
FAULT = FAULT_TEMPLATE.format(
    unpacked="(batches,)", name="batches", thing="loader", own="in the factory, its epoch hook, or its reading"
)
# ... a loader that read another epoch first, and a fresh one (loader_deterministic).
TWICE = TWICE_TEMPLATE.format(
    thing="loader",
    pick="",
    hooked="""with tempfile.TemporaryDirectory() as workdir:
    hooked = hook_of(build(W, 0, workdir)) is not None""",
    hook="an epoch hook",
)
# ... one loader a rank, its hook called before each of two epochs (loader_reshuffles).
TWO_EPOCHS = """EPOCHS = $epochs  # as the suite's test drew them
ranks = [read_rank(W, r, EPOCHS) for r in range(W)]
for r, (first, second) in enumerate(ranks):
    print(f"rank {r}: epoch {EPOCHS[0]}: {short(first)}; epoch {EPOCHS[1]}: {short(second)}")
"""
# ... the same case at several DP sizes (loader_same_global_batches).
DP_SIZES = """DP_SIZES = $dp_sizes
global_batches = {}
for world in DP_SIZES:
    ranks = [read_rank(world, r, [EPOCH])[0] for r in range(world)]
    steps = max(len(batches) for batches in ranks)
    global_batches[world] = [sorted(i for batches in ranks if g < len(batches) for i in batches[g]) for g in range(steps)]
    print(f"DP size {world}: global batches {short(global_batches[world])}")
"""

# Rank r's loader of the case, its epoch hook for EPOCH and K batches of it, in a workdir of its own:
# where a resume's and a checkpoint's reading take the state.
K_BATCHES = """        loader = build(W, r, workdir)
        if hook_of(loader):
            hook_of(loader)(EPOCH)
        batches = iter(loader)  # the epoch under way while the state is taken
        before = [ids(batch) for batch in itertools.islice(batches, K)]
"""

# ... the loader's own checkpoint after K batches of EPOCH, resumed by a fresh loader of each rank
# in both orders of the epoch hook and load_state_dict, beside the uninterrupted run (+resumable).
RESUMED = (
    """K = $cut  # batches read before state_dict(), as the suite's test drew it
uninterrupted = [read_rank(W, r, [EPOCH, EPOCH + 1]) for r in range(W)]
resumed = {}  # (rank, order): epoch EPOCH (its K batches, then the resumed loader's rest) and EPOCH + 1
for r in range(W):
    with tempfile.TemporaryDirectory() as workdir:
"""
    + K_BATCHES
    + """        state = copy.deepcopy(loader.state_dict())  # the checkpoint
        for order in ("hook, then load_state_dict", "load_state_dict, then hook"):
            fresh = build(W, r, workdir)
            if order.startswith("load"):
                fresh.load_state_dict(copy.deepcopy(state))
            if hook_of(fresh):
                hook_of(fresh)(EPOCH)
            if order.startswith("hook"):
                fresh.load_state_dict(copy.deepcopy(state))
            rest = [ids(batch) for batch in itertools.islice(fresh, LIMIT + 1)]
            if hook_of(fresh):
                hook_of(fresh)(EPOCH + 1)
            resumed[r, order] = before + rest, [ids(batch) for batch in itertools.islice(fresh, LIMIT + 1)]
for (r, order), (epoch, after) in resumed.items():
    print(f"rank {r}, {order}: epoch {EPOCH} {short(epoch)}; epoch {EPOCH + 1} {short(after)}")
print(f"uninterrupted, rank 0: epoch {EPOCH} {short(uninterrupted[0][0])}; epoch {EPOCH + 1} {short(uninterrupted[0][1])}")
"""
)
# ... rank 0's checkpoint at DP size W1, loaded into every rank of DP size W (+elastic+resumable).
RESUMED_ELSEWHERE = """W1, K = $saved_on, $cut  # the DP size the checkpoint was taken at, and its global batches before it
with tempfile.TemporaryDirectory() as workdir:
    loader = build(W1, 0, workdir)
    if hook_of(loader):
        hook_of(loader)(EPOCH)
    batches = iter(loader)  # the epoch under way while the state is taken
    before = [ids(batch) for batch in itertools.islice(batches, K)]
    state = copy.deepcopy(loader.state_dict())  # rank 0's checkpoint: every rank of DP size W loads it
rests = []
for r in range(W):
    with tempfile.TemporaryDirectory() as workdir:
        fresh = build(W, r, workdir)
        fresh.load_state_dict(copy.deepcopy(state))
        if hook_of(fresh):
            hook_of(fresh)(EPOCH)
        rests.append([ids(batch) for batch in itertools.islice(fresh, LIMIT + 1)])
ranks = [read_rank(W, r, [EPOCH])[0] for r in range(W)]
expected, got = (
    [sorted(i for batches in read if g < len(batches) for i in batches[g]) for g in range(max(map(len, read)))]
    for read in (ranks, rests)
)
print(f"uninterrupted at W={W}, global batches {K} on: {short(expected[K:])}")
print(f"resumed at W={W} from rank 0's state at W1={W1}: {short(got)}")
"""
# ... each rank's state after K batches of EPOCH, saved and loaded as a checkpoint file (loader_plain_state).
CHECKPOINTED = (
    THROUGH_CHECKPOINT
    + """


K = $cut  # batches read before state_dict(), as the suite's test drew it
not_plain = []
for r in range(W):
    with tempfile.TemporaryDirectory() as workdir:
"""
    + K_BATCHES
    + """        state = loader.state_dict()
    print(f"rank {r}: state_dict() after {K} batches: {state!r}")
    _, why = through_checkpoint(state)  # as a trainer saves its checkpoint, and loads it
    if why:
        not_plain.append((r, why))
"""
)
# What a resume failure shows: the first (rank, order) whose epoch ($which: 0, EPOCH; 1, EPOCH + 1) differs.
RESUME_SHOWN = """wrong = [(r, order) for (r, order), read in resumed.items() if read[$which] != uninterrupted[r][$which]]
broken = bool(wrong)
r, order = (wrong or list(resumed))[0]
shown = f"rank {r}, {order}: resumed {short(resumed[r, order][$which])}, uninterrupted {short(uninterrupted[r][$which])}\""""


@dataclass(frozen=True)
class Snippet:
    promise: str
    code: str  # sets broken and shown
    reading: str = ONE_EPOCH
    imports: tuple[str, ...] = ()


SNIPPETS = {
    "loader_runs": Snippet(
        "every rank's loader is built, given its epoch and read to the epoch's end without raising.",
        "broken = bool(fault)\nshown = fault",
        reading=FAULT,
        imports=("traceback",),
    ),
    "loader_batch_ids": Snippet(
        "every batch carries the ids of its instances, in range(N).",
        "outside = [i for batches in ranks for batch in batches for i in batch if not 0 <= i < N]\n"
        'broken = bool(outside)\nshown = f"ids outside range({N}): {short(outside)}"',
    ),
    "loader_each_instance_once": Snippet(
        "each instance is in exactly one rank's batch of the epoch, only an incomplete final global batch "
        "(fewer than B instances) left out.",
        "counts = collections.Counter(i for batches in ranks for batch in batches for i in batch)\n"
        "twice = sorted(i for i, n in counts.items() if n > 1)\n"
        "missing = [i for i in range(N) if not counts[i]]\n"
        "broken = bool(twice) or len(missing) >= B\n"
        'shown = f"read more than once: {short(twice)}; never read: {short(missing)} (fewer than B={B} may be)"',
        imports=("collections",),
    ),
    "loader_rank_batch_size": Snippet(
        "each rank's batch holds B // W instances.",
        "wrong = [(r, step, len(batch)) for r, batches in enumerate(ranks) for step, batch in enumerate(batches)\n"
        "         if len(batch) != B // W]\n"
        'broken = bool(wrong)\nshown = f"(rank, batch, size) where the size is not {B // W}: {short(wrong)}"',
    ),
    "loader_equal_batch_counts": Snippet(
        "every rank reads the same number of batches in the epoch (DDP's all-reduce waits for the others).",
        'broken = len({len(batches) for batches in ranks}) > 1\nshown = f"batches per rank: {[len(b) for b in ranks]}"',
    ),
    "loader_deterministic": Snippet(
        "the batches of an epoch are set by the seed and the epoch: a loader that read another epoch first, and "
        "a fresh one, read the same.",
        'broken = first != fresh\nshown = f"rank 0 after epoch {BEFORE}: {short(first[0])}; fresh: {short(fresh[0])}"',
        reading=TWICE,
    ),
    "loader_reshuffles": Snippet(
        "the epoch hook gives the next epoch other batches.",
        "broken = all(first == second for first, second in ranks) or (any(f for f, _ in ranks) and not any(s for _, s in ranks))\n"
        'shown = f"rank 0: epoch {EPOCHS[0]}: {short(ranks[0][0])}; epoch {EPOCHS[1]}: {short(ranks[0][1])}"',
        reading=TWO_EPOCHS,
    ),
    "loader_resume_continues": Snippet(
        "checkpointed after K batches (state_dict()), a fresh loader given the state and its epoch hook, in "
        "either order, goes on with batch K + 1: the epoch is the uninterrupted run's, batch for batch.",
        RESUME_SHOWN.replace("$which", "0"),
        reading=RESUMED,
        imports=("copy",),
    ),
    "loader_epoch_after_resume": Snippet(
        "the epoch after a resume is the uninterrupted run's, batch for batch.",
        RESUME_SHOWN.replace("$which", "1"),
        reading=RESUMED,
        imports=("copy",),
    ),
    "loader_resume_on_other_dp_size": Snippet(
        "rank 0's checkpoint after K global batches at DP size W1, loaded into every rank at DP size W, goes on "
        "with the same global batches: K + 1 onward, to the epoch's end.",
        'broken = got != expected[K:]\nshown = f"resumed: {short(got)}; uninterrupted from global batch {K}: '
        '{short(expected[K:])}"',
        reading=RESUMED_ELSEWHERE,
        imports=("copy",),
    ),
    "loader_plain_state": Snippet(
        "each rank's state_dict() is plain data: saved by torch.save, it loads with torch.load(weights_only=True).",
        'broken = bool(not_plain)\nshown = f"rank {not_plain[0][0]}: {not_plain[0][1]}" if not_plain else ""',
        reading=CHECKPOINTED,
        imports=("io", "torch"),
    ),
    "loader_same_global_batches": Snippet(
        "global batch g, every rank's batch g together, holds the same instances at every DP size.",
        "broken = any(global_batches[w] != global_batches[DP_SIZES[0]] for w in DP_SIZES)\n"
        'shown = "; ".join(f"DP size {w}: {short(global_batches[w])}" for w in DP_SIZES)',
        reading=DP_SIZES,
    ),
}


# replicas_read_alike on the job's device mesh (+mesh): its reading is the part every rank's process
# imports, each building its loader there as the suite does (execution/mesh.py, FactoryPlug.placed) and
# reading the case's epoch, then run_ranks (common/repro_groups.py); MESH_MAIN reads the ranks.
ON_MESH = Snippet(
    PROMISE,
    APART,
    reading="""Factory = load(SPEC)  # here, and in every rank's process, which imports this file
"""
    + MESH
    + '''


def read_in_group(world, rank):
    """This rank's loader on the mesh, built as the suite builds it there, and its batches of EPOCH:
    a factory that names device_mesh is given this process's mesh, with the global rank and size,
    and finds its data coordinates there; another is told its data coordinate, of W."""
    mesh = torch.distributed.device_mesh.init_device_mesh("cpu", MESH_SIZES, mesh_dim_names=MESH_NAMES)
    if "device_mesh" not in inspect.signature(Factory).parameters:
        return read_rank(W, DATA_RANKS[rank], [EPOCH])[0]
    OPTIONS["device_mesh"] = mesh  # in this rank's process only: taken() gives it to the factory
    return read_rank(world, rank, [EPOCH])[0]


$run_ranks


''',
    imports=GROUP_IMPORTS,
)
# Its main part: the ranks read in the group, the promise asserted over their readings.
MESH_MAIN = Template("""print(f"$said, on the mesh {dict(zip(MESH_NAMES, MESH_SIZES))}, in a gloo group of {len(DATA_RANKS)} processes")
ranks = run_ranks(len(DATA_RANKS))
for r, batches in enumerate(ranks):
    print(f"rank {r} (data rank {DATA_RANKS[r]}): {short(batches)}")
# The promise: $promise
$code
$tail""")


def filled(reading: str, record: Mapping[str, Any]) -> str:
    """``reading`` with the failing test's draws it names written in (the epochs, the checkpoint's
    k, the DP size it was taken at) and the DP sizes +elastic compares."""
    epochs = drawn(record, "epochs")
    dp_sizes = drawn(record, "W1, W2 (DP sizes checkpointed at, resumed on)")
    values = {
        "epochs": epochs,
        "before": epochs[0] if epochs else None,
        "cut": drawn(record, "k (batches before the checkpoint)"),
        "saved_on": dp_sizes[0] if dp_sizes else None,
        "dp_sizes": list(ELASTIC_WORLD_SIZES),
    }
    return written_in(reading, values)


def scripted(contract: Contract) -> frozenset[str]:
    """The flags a script is written for: every one of SNIPPETS, and under ``+mesh`` the replicas' own."""
    return frozenset(SNIPPETS) | ({MESH_FLAG} if contract.promises(MESH_FLAG) else set())


def script_for(plug: Plug, contract: Contract, record: Mapping[str, Any], filename: str) -> str:
    """The script that reproduces ``record``, to be saved as ``filename``; CannotReproduce says why not."""
    assert isinstance(plug, LoaderPlug) and isinstance(contract, LoaderContract)
    layout = mesh_layout(record)  # the failing test's device mesh, for replicas_read_alike
    found = snippet_for(record, {**SNIPPETS, MESH_FLAG: ON_MESH}, FAULT, "loader")
    case = LoaderCase.from_parameters(record["parameters"])
    spec = script_spec(plug)
    head = HEAD.format(
        docstring=docstring(record, spec, filename),
        imports=imports(("inspect", "tempfile", *found.imports)),
        spec=spec,
        n=case.dataset_size,
        w=case.world_size,
        b=case.global_batch_size,
        epoch=case.epoch,
        options={"seed": case.seed, "num_workers": case.num_workers},
        limit=read_limit(case.dataset_size),
        load=LOAD,
        taken=TAKEN.format(),
        keys=" or ".join(f'"{key}"' for key in ID_KEYS),
        id_keys=ID_KEYS,
        hooks=EPOCH_HOOKS,
        hook_names=" or ".join(f"{name}(epoch)" for name in EPOCH_HOOKS),
        short=SHORT,
    )
    if layout is not None:  # every rank of the mesh a process of one gloo group
        ranks_part = Template(found.reading).substitute(mesh_values(layout), run_ranks=run_ranks())
        promise, code = found.promise, found.code
        main = MESH_MAIN.substitute(said=SAID, promise=promise, code=code, tail=tail(record, promise))
        return head + ranks_part + guarded(main)
    main = main_part(SAID, record, filled(found.reading, record), found.promise, found.code)
    # Its main part runs only as __main__: loader workers started by forkserver or spawn (macOS,
    # Python 3.14) import the script again, and must not read again.
    return head + 'if __name__ == "__main__":\n' + textwrap.indent(main, "    ")
