"""The readings a group script makes of what only real process groups judge of an index
sampler (``repro_groups.GROUP_ONLY``'s entries, one per invariant): each rank's
``read_in_group(world, rank)`` in its process, the lines that print the readings, the promise
and the code that judges it in the script's own process; and how a DataLoader over the sampler
batches, for the loader's readings. ``repro_groups`` puts them together into a script."""

from __future__ import annotations

from dataclasses import dataclass, field

from sampler_conformance.subjects.common.repro_mesh import APART, MESH, PROMISE

from .repro_resume import HELPERS
from .repro_resume import IMPORTS as RESUME_IMPORTS


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
    # Each process's sampler built as the only rank, as test_ranks_agree_on_one_order builds it;
    # after its global RNGs drifted on rank 0 where the test drew a global seed to drift from.
    # The ranks are forked from this script's process, so an order that only separate
    # interpreters make apart (hash() of a str, an RNG the OS seeds) is not shown: that run
    # offers no script and says so. One that follows the group's rank, or the global RNGs, is.
    "agrees_across_ranks": GroupReading(
        """DRIFT_SEED = $drift_seed  # every rank seeds its global RNGs with it, then rank 0 draws once more (None: not)


def read_in_group(world, rank):
    \"\"\"This process's sampler built as the only rank (num_replicas=1, rank=0), read once: the
    global order this process computes.\"\"\"
    if DRIFT_SEED is not None:
        torch.manual_seed(DRIFT_SEED)
        numpy.random.seed(DRIFT_SEED % 2**32)
        random.seed(DRIFT_SEED)
        if rank == 0:  # as dropout on a batch only this rank has: one more draw from each global RNG
            torch.rand(1), numpy.random.random(), random.random()
    return one_pass(build(1, 0))""",
        'print(f"{SPEC}: N={N}, epoch={EPOCH}, {OPTIONS}, built with num_replicas=1, rank=0 in each of the {W} "\n'
        '      f"processes of a gloo group" + (f", global RNGs seeded with {DRIFT_SEED}, rank 0\'s drawn once more" if DRIFT_SEED is not None else ""))\n'
        "for r, indices in enumerate(ranks):\n"
        '    print(f"rank {r}\'s process: {short(indices)}")\n',
        "built with the same arguments in every rank's process, the sampler computes the same order in each: the "
        "one global order the ranks' shares are cut from.",
        "apart = [r for r in range(1, W) if ranks[r] != ranks[0]]\n"
        "broken = bool(apart)\n"
        'shown = "; ".join(f"rank 0\'s process yields {short(ranks[0])}, rank {r}\'s {short(ranks[r])}" for r in apart[:2])',
        imports=("random", "numpy"),
    ),
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
