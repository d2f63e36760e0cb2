"""A plain-Python script that reproduces one counterexample of a batch sampler without the suite
(docs/reproductions.md): it imports the factory the spec names (and so torch), builds every
rank's batch sampler of the case with the arguments the suite built it with (the items'
lengths, the budget, the step's size or the rate, the seed), calls ``set_epoch`` before each
epoch and reads its batches as the suite read them, asserts the promise, prints the suite's
words and exits 1 while the bug is there.

Covered: a fault charged to ``batches_run`` where the sampler raised, ``batch_items``,
``equal_batch_counts``, ``within_budget``, ``each_item_once``, ``poisson_shards_disjoint``,
``batch_len_matches``, ``batches_deterministic`` and ``batches_reshuffle``, found on simulated
ranks (a failure found in a real group only is read in one process, rank after rank, and the
script says so; the suite offers it only where it fails there too); the statistical
``poisson_rate``, over the epochs the suite's test pooled, its bound and threshold written out;
and ``batch_plan_agrees``, in a fresh process per rank (the script starts itself once a rank).
``replicas_read_alike`` (meshes) raises :class:`CannotReproduce`, saying why."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sampler_conformance.core.contracts import Contract
from sampler_conformance.core.subject import CannotReproduce, Plug
from sampler_conformance.subjects.common.repro_groups import PROCESS_IMPORTS, fresh_processes, process_hash_seeds
from sampler_conformance.subjects.common.repro_script import (
    BOUND,
    FAULT_TEMPLATE,
    LOAD,
    SAMPLER_RAISES,
    SHORT,
    TAKEN,
    docstring,
    drawn,
    imports,
    main_part,
    sampler_twice,
    script_spec,
    snippet_for,
    threshold,
    written_in,
)

from .case import BatchCase, read_limit
from .checks import MAX_RATE_EPOCHS, RATE_STEPS
from .contracts import BatchContract
from .plug import BatchPlug

# The epochs whose plans a batch_plan_agrees script compares: two processes that plan one
# epoch of two items apart at random agree on all of them with a chance of 2^-32.
PLAN_EPOCHS = 32

# {name} is filled in, {{ }} stays a brace.
HEAD = """{docstring}

{imports}

SPEC = sys.argv[1] if len(sys.argv) > 1 else {spec!r}  # or another batch sampler factory, to compare
N, W, EPOCH = {n}, {w}, {epoch}
LENGTHS = {lengths!r}  # item i's length
OPTIONS = {options!r}  # those the factory takes are given
COST = {cost!r}  # a batch's cost against max_tokens: "sum" of its lengths, or "padded" (longest x count)
EMPTY_BATCHES = {empty!r}  # whether the contract counts an empty batch as a step (Poisson)
LIMIT = {limit}  # a rank that yields more batches than this never stops


{load}


{taken}


def indices(batch):
    \"\"\"A batch's indices: a list or tuple of them, or a 1-D integer tensor or array; None for anything else.\"\"\"
    if isinstance(batch, (list, tuple)):
        return list(batch)
    if getattr(batch, "ndim", None) == 1 and "int" in str(batch.dtype):
        return batch.tolist()
    return None


def length(sampler):
    \"\"\"len(sampler), or what stood in its way.\"\"\"
    if not hasattr(type(sampler), "__len__"):
        return "no __len__"
    try:
        return len(sampler)
    except Exception as exc:  # the sampler's: batch_len_matches is charged with it, the rest read on
        return f"len() raised {{type(exc).__name__}}"


def read_rank(world, rank, epochs):
    \"\"\"Rank ``rank``'s batch sampler of ``world``, built afresh, set_epoch(e) before each of
    ``epochs`` (None: not called): per epoch, its batches, len() before the pass and after it.\"\"\"
    sampler = Factory(LENGTHS, num_replicas=world, rank=rank, **taken(OPTIONS))
    read = []
    for epoch in epochs:
        if epoch is not None and callable(getattr(sampler, "set_epoch", None)):
            sampler.set_epoch(epoch)
        before = length(sampler)
        batches = [indices(batch) for batch in itertools.islice(sampler, LIMIT + 1)]
        read.append((batches, before, length(sampler)))
    return read


{short}


"""
SAID = "{SPEC}: N={N}, W={W}, epoch={EPOCH}, {OPTIONS}, lengths {short(LENGTHS)}"  # the case, as the script prints it

# How the script reads the ranks: one epoch of every rank, each rank's batches.
ONE_EPOCH = """ranks = [read_rank(W, r, [EPOCH])[0][0] for r in range(W)]
for r, batches in enumerate(ranks):
    print(f"rank {r} ({len(batches)} batches): {short(batches)}")
"""
# ... each rank in turn, up to the first that raises: its exception is the fault.
FAULT = FAULT_TEMPLATE.format(unpacked="((batches, _, _),)", name="batches", thing="sampler", own=SAMPLER_RAISES)
# ... len() before and after each of the epochs the test drew (batch_len_matches).
LENS = """EPOCHS = $epochs  # as the suite's test drew them
ranks = [read_rank(W, r, EPOCHS) for r in range(W)]
wrong = [(r, e, len(batches), before, after) for r, read in enumerate(ranks)
         for e, (batches, before, after) in zip(EPOCHS, read) if len(batches) != before or len(batches) != after]
for r, read in enumerate(ranks):
    print(f"rank {r}: (batches, len() before, len() after) per epoch {EPOCHS}: {[(len(b), x, y) for b, x, y in read]}")
"""
# ... a sampler that read another epoch first, and a fresh one (batches_deterministic).
TWICE = sampler_twice("LENGTHS")
# ... one sampler a rank, set_epoch before each of two epochs (batches_reshuffle).
TWO_EPOCHS = """EPOCHS = $epochs  # as the suite's test drew them
ranks = [[batches for batches, _, _ in read_rank(W, r, EPOCHS)] for r in range(W)]
for r, (first, second) in enumerate(ranks):
    print(f"rank {r}: epoch {EPOCHS[0]}: {short(first)}; epoch {EPOCHS[1]}: {short(second)}")
"""

# ... every rank over the epochs the suite's rate test pooled (poisson_rate): its first epoch
# read alone for the steps an epoch, then epochs from it until every item had RATE_STEPS steps
# to be drawn at; each item's count against Binomial(steps, q), and all items' together.
RATE = (
    """THRESHOLD = $threshold  # the suite's: this test's share of the false-alarm rate 1e-6, over the items and their total
FIRST, RATE = $first_epoch, OPTIONS["sample_rate"]  # the first epoch, as the suite's test drew it


def steps_of(read):
    \"\"\"The steps every rank ran in an epoch (each rank's batches, len() before, len() after): their
    common len(), else their common count of batches; None where they differ.\"\"\"
    lengths = {after for _, _, after in read}
    if len(lengths) == 1 and isinstance(next(iter(lengths)), int):
        return lengths.pop()
    counts = {len(batches) for batches, _, _ in read}
    return counts.pop() if len(counts) == 1 else None


STEPS = steps_of([read_rank(W, r, [FIRST])[0] for r in range(W)])
EPOCHS = range(FIRST, FIRST + min($max_epochs, -(-$rate_steps // STEPS)) if STEPS else FIRST)
ranks = [read_rank(W, r, EPOCHS) for r in range(W)]
# Judged where every epoch ran STEPS steps on every rank (else it is equal_batch_counts' case).
judged = bool(STEPS) and all(steps_of([read[e] for read in ranks]) == STEPS for e in range(len(EPOCHS)))
S = STEPS * len(EPOCHS) if judged else 0  # the steps at which each item was drawn or not
counts = [0] * N
for read in ranks:
    for batches, _, _ in read:
        for i in itertools.chain.from_iterable(batch or () for batch in batches):
            if 0 <= i < N:
                counts[i] += 1


"""
    + BOUND
    + """


bounds = {f"item {i}": bound(count, S, RATE) for i, count in enumerate(counts)}
bounds["all items together"] = bound(sum(counts), S * N, RATE)
worst = min(bounds, key=bounds.get)
print(f"{len(EPOCHS)} epochs from {FIRST}, {STEPS} steps each; each item's draws: {short(counts)}, {S * RATE:.1f} expected")
"""
)

# ... rank AS_RANK's sampler built in a fresh process for each rank, as torchrun starts a job's
# (batch_plan_agrees): the script runs itself once a rank (common/repro_groups.FRESH_PROCESSES),
# each child sending its plans back. It reads more epochs than the test did: one epoch of a few
# items is planned alike by chance.
PROCESSES = (
    """AS_RANK = $as_rank  # the rank whose sampler every process builds, as the suite's test drew it
EPOCHS = range(EPOCH, EPOCH + $plan_epochs)
HASH_SEEDS = $hash_seeds  # each rank's process's PYTHONHASHSEED, as the suite gave them
"""
    + fresh_processes()
    + """


def plans(rank):
    \"\"\"Rank AS_RANK's batches at each of EPOCHS, as this process plans them.\"\"\"
    return [batches for batches, _, _ in read_rank(W, AS_RANK, EPOCHS)]


if RANK_OF_PROCESS:  # a process the script started: its plans, and no more
    in_process_of_rank(plans)
theirs = start_processes(range(W))
apart = [r for r in range(1, W) if theirs[r] != theirs[0]]
print(f"rank {AS_RANK}'s sampler, built in {W} fresh processes, one a rank, epochs {EPOCHS[0]} to {EPOCHS[-1]}")
"""
)


@dataclass(frozen=True)
class Snippet:
    promise: str
    code: str  # sets broken and shown
    reading: str = ONE_EPOCH
    imports: tuple[str, ...] = ()


SNIPPETS = {
    "batches_run": Snippet(
        "every rank's batch sampler is built, set to its epoch and read to the epoch's end without raising.",
        "broken = bool(fault)\nshown = fault",
        reading=FAULT,
        imports=("traceback",),
    ),
    "batch_items": Snippet(
        "every batch is a list of int indices in range(N) (a 1-D integer tensor will do), and not empty where "
        "the contract has no empty steps.",
        "wrong = [(r, step, batch) for r, batches in enumerate(ranks) for step, batch in enumerate(batches)\n"
        "         if batch is None or (not batch and not EMPTY_BATCHES)\n"
        "         or not all(isinstance(i, numbers.Integral) and not isinstance(i, bool) and 0 <= i < N for i in batch)]\n"
        'broken = bool(wrong)\nshown = f"(rank, batch, its indices) that are not: {short(wrong)}"',
        imports=("numbers",),
    ),
    "equal_batch_counts": Snippet(
        "every rank yields the same number of batches in the epoch (DDP's all-reduce waits for the others).",
        'broken = len({len(batches) for batches in ranks}) > 1\nshown = f"batches per rank: {[len(b) for b in ranks]}"',
    ),
    "within_budget": Snippet(
        "every batch costs at most max_tokens, an item longer than the budget alone.",
        "def cost(batch):  # as the sampler declares it (COST), of the indices in range(N)\n"
        "    batch = [i for i in batch if 0 <= i < N]\n"
        "    if not batch:\n"
        "        return 0\n"
        '    return max(LENGTHS[i] for i in batch) * len(batch) if COST == "padded" else sum(LENGTHS[i] for i in batch)\n'
        "\n\n"
        "over = [(r, step, batch, cost(batch)) for r, batches in enumerate(ranks) for step, batch in "
        'enumerate(batches)\n        if len(batch) > 1 and cost(batch) > OPTIONS["max_tokens"]]\n'
        'broken = bool(over)\nshown = f"(rank, batch, its indices, its {COST} cost) over max_tokens: {short(over)}"',
    ),
    "each_item_once": Snippet(
        "each item at most once in the epoch across ranks; those left out fit in an incomplete last round "
        "(W - 1 batches of max_tokens, or fewer than batch_size items).",
        "counts = collections.Counter(i for batches in ranks for batch in batches for i in batch)\n"
        "twice = sorted(i for i, n in counts.items() if n > 1)\n"
        "missing = [i for i in range(N) if not counts[i]]\n"
        'if OPTIONS.get("batch_size"):\n'
        '    left_out, allowed = len(missing), OPTIONS["batch_size"] - 1\n'
        "else:\n"
        '    left_out = sum(min(LENGTHS[i], OPTIONS["max_tokens"]) for i in missing)\n'
        '    allowed = (W - 1) * OPTIONS["max_tokens"]\n'
        "broken = bool(twice) or left_out > allowed\n"
        'shown = f"yielded more than once: {short(twice)}; never yielded: {short(missing)} ({left_out}, where at '
        'most {allowed} may be)"',
        imports=("collections",),
    ),
    "poisson_shards_disjoint": Snippet(
        "no item is drawn by two ranks in one epoch: the ranks draw from disjoint shards.",
        "owners = collections.defaultdict(set)\n"
        "for r, batches in enumerate(ranks):\n"
        "    for batch in batches:\n"
        "        for i in batch:\n"
        "            owners[i].add(r)\n"
        "shared = sorted((i, sorted(rs)) for i, rs in owners.items() if len(rs) > 1)\n"
        'broken = bool(shared)\nshown = f"(item, the ranks that drew it): {short(shared)}"',
        imports=("collections",),
    ),
    "batch_len_matches": Snippet(
        "len(), before and after each epoch, counts the batches the rank yields.",
        'broken = bool(wrong)\nshown = f"(rank, epoch, batches, len() before, len() after): {short(wrong)}"',
        reading=LENS,
    ),
    "batches_deterministic": Snippet(
        "the batches of an epoch are set by the seed and the epoch: a sampler that read another epoch first, and "
        "a fresh one, plan the same.",
        'broken = first != fresh\nshown = f"rank 0 after epoch {BEFORE}: {short(first[0])}; fresh: {short(fresh[0])}"',
        reading=TWICE,
    ),
    "batches_reshuffle": Snippet(
        "set_epoch gives the next epoch other batches.",
        "broken = all(first == second for first, second in ranks)\n"
        'shown = f"rank 0: epoch {EPOCHS[0]}: {short(ranks[0][0])}; epoch {EPOCHS[1]}: {short(ranks[0][1])}"',
        reading=TWO_EPOCHS,
    ),
    "poisson_rate": Snippet(
        "each item is drawn at each step with probability sample_rate: no item's count over the steps, nor all "
        "items' together, so far from steps x sample_rate that its p-value bound falls to the suite's threshold.",
        "broken = judged and 0 < RATE <= 1 and bounds[worst] <= THRESHOLD\n"
        'shown = f"{worst}: p-value at most {bounds[worst]:.3g}, threshold {THRESHOLD:.3g}" if judged else "not judged"',
        reading=RATE,
        imports=("math",),
    ),
    "batch_plan_agrees": Snippet(
        "every process that builds a rank's sampler for the same case plans the same batches, at every epoch.",
        "broken = bool(apart)\n"
        'shown = f"the processes of ranks {apart} planned other batches than rank 0\'s, in at least one epoch"',
        reading=PROCESSES,
        imports=PROCESS_IMPORTS,
    ),
}


def scripted(contract: Contract) -> frozenset[str]:
    """The flags a script is written for, under every contract of the subject."""
    return frozenset(SNIPPETS)


def script_for(plug: Plug, contract: Contract, record: Mapping[str, Any], filename: str) -> str:
    """The script that reproduces ``record``, to be saved as ``filename``; CannotReproduce says why not."""
    assert isinstance(plug, BatchPlug) and isinstance(contract, BatchContract)
    if plug.needs_process_group or plug.takes_mesh:
        raise CannotReproduce("the sampler takes its rank from the process group or a device mesh")
    found = snippet_for(record, SNIPPETS, FAULT, "sampler")
    case = BatchCase.from_parameters(record["parameters"])
    epochs = drawn(record, "epochs")
    values = {
        "epochs": epochs,
        "before": epochs[0] if epochs else None,
        "first_epoch": drawn(record, "first epoch"),
        "threshold": threshold(record),
        "rate_steps": RATE_STEPS,
        "max_epochs": MAX_RATE_EPOCHS,
        "as_rank": drawn(record, "rank built in every process"),
        "plan_epochs": PLAN_EPOCHS,
        "hash_seeds": process_hash_seeds(case.world_size),
    }
    reading = written_in(found.reading, values)
    options = {name: value for name, value in case.sampler_options().items() if value or name == "seed"}
    spec = script_spec(plug)
    head = HEAD.format(
        docstring=docstring(record, spec, filename),
        imports=imports(("inspect", *found.imports)),
        spec=spec,
        n=case.dataset_size,
        w=case.world_size,
        epoch=case.epoch,
        lengths=list(case.lengths),
        options=options,
        cost=plug.cost,
        empty=contract.empty_batches,
        limit=read_limit(case),
        load=LOAD,
        taken=TAKEN.format(),
        short=SHORT,
    )
    if found.reading == PROCESSES:  # read in processes of its own, not in one process rank after rank
        record = {**record, "in_groups": False}
    main = main_part(SAID, record, reading, found.promise, found.code)
    return head + main
