"""What a streaming dataset's reproduction script (``repro.py``) reads and asserts for the order
invariants and the reading by another number of workers: each rank's dataset read twice
(``stream_deterministic``), at the epochs the test drew (``stream_reshuffles``), built with the
seeds it read (``stream_seed_effective``), by the other number of workers it drew
(``same_items_any_workers``) and by persistent workers (``epoch_reaches_workers``), each reading through its own DataLoader, as the test read it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sampler_conformance.subjects.common.repro_script import drawn

from .case import SEED_LIMIT, StreamCase
from .order_checks import MIN_COMPARABLE_ITEMS, RESHUFFLE_EPOCHS
from .repro_snippets import Snippet, loader_seeds

SAID = 'print(f"{SPEC}: N={N}, W={W}, epoch={EPOCH}, {OPTIONS}, DataLoader({LOADER})")\n'


def _again(case: StreamCase, record: Mapping[str, Any]) -> tuple[StreamCase, dict[str, Any]]:
    return case, {"AGAIN_SEEDS": loader_seeds(case, reading=1)}


def _epochs(case: StreamCase, record: Mapping[str, Any]) -> tuple[StreamCase, dict[str, Any]]:
    epochs = drawn(record, "epochs") or [case.epoch]
    return case, {"EPOCHS": epochs, "MIN_COMPARABLE": MIN_COMPARABLE_ITEMS}


def _seeds(case: StreamCase, record: Mapping[str, Any]) -> tuple[StreamCase, dict[str, Any]]:
    """The test read RESHUFFLE_EPOCHS consecutive seeds from the one it drew; the counterexample is the last one's."""
    first = drawn(record, "seed")
    if first is None:
        first = (case.seed - RESHUFFLE_EPOCHS + 1) % SEED_LIMIT
    seeds = [(first + k) % SEED_LIMIT for k in range(RESHUFFLE_EPOCHS)]
    each = [loader_seeds(case.with_(seed=seed)) for seed in seeds]
    return case.with_(seed=first), {"SEEDS": seeds, "SEED_LOADER_SEEDS": each, "MIN_COMPARABLE": MIN_COMPARABLE_ITEMS}


def _other_workers(case: StreamCase, record: Mapping[str, Any]) -> tuple[StreamCase, dict[str, Any]]:
    """The counterexample is the second reading's (the other number of workers, persistent in
    real groups); the first read the drawn number, through fresh workers, each epoch drawn."""
    first = drawn(record, "num_workers")
    first_case = case.with_(num_workers=case.num_workers if first is None else first, persistent_workers=False)
    other = {
        "OTHER_WORKERS": case.num_workers,
        "OTHER_PERSISTENT": case.persistent_workers and case.num_workers > 0,
        "OTHER_SEEDS": loader_seeds(case),
        "EPOCHS": drawn(record, "epochs") or [case.epoch],
    }
    return first_case, other


def _persistent(case: StreamCase, record: Mapping[str, Any]) -> tuple[StreamCase, dict[str, Any]]:
    """The counterexample is the persistent workers' reading; the fresh workers' came first."""
    kept = {"KEPT_SEEDS": loader_seeds(case), "EPOCHS": drawn(record, "epochs") or [case.epoch]}
    return case.with_(persistent_workers=False), kept


# Two fresh datasets a rank, each read through a DataLoader whose generator another run of the
# training script would seed otherwise (the suite's second reading).
TWICE = (
    SAID
    + """first = [ids_of(epoch_of(r)) for r in range(W)]
second = [ids_of(read(build(r), r, AGAIN_SEEDS[r])[0]) for r in range(W)]
for r in range(W):
    print(f"rank {r}: {short(first[r])}, then {short(second[r])}")
"""
)
# One dataset a rank, read at each of EPOCHS (set_epoch before each), each through fresh workers.
EPOCHS_READ = """print(f"{SPEC}: N={N}, W={W}, epochs {EPOCHS}, {OPTIONS}, DataLoader({LOADER})")
ranks = [read(build(r), r, LOADER_SEEDS[r], EPOCHS) for r in range(W)]
orders = [[i for r in range(W) for i in ids_of(ranks[r][k])] for k in range(len(EPOCHS))]
for epoch, order in zip(EPOCHS, orders):
    print(f"epoch {epoch} (ranks concatenated): {short(order)}")
"""
# Every rank's dataset built with each of SEEDS, read at the epoch EPOCH.
SEEDS_READ = (
    SAID
    + """orders = []
for seed, seeds in zip(SEEDS, SEED_LOADER_SEEDS):
    orders.append([i for r in range(W) for i in ids_of(read(build(r, seed=seed), r, seeds[r])[0])])
    print(f"seed {seed} (ranks concatenated): {short(orders[-1])}")
"""
)
# The epochs read by the drawn number of workers, then by OTHER_WORKERS, each rank's dataset fresh.
OTHER_WORKERS_READ = """print(f"{SPEC}: N={N}, W={W}, epochs {EPOCHS}, {OPTIONS}, DataLoader({LOADER})")
first = [read(build(r), r, LOADER_SEEDS[r], EPOCHS) for r in range(W)]
other = [
    read(build(r), r, OTHER_SEEDS[r], EPOCHS, num_workers=OTHER_WORKERS, persistent_workers=OTHER_PERSISTENT)
    for r in range(W)
]
counted = []  # each epoch's items, all ranks together, counted: by the drawn workers, then by the others
for k, epoch in enumerate(EPOCHS):
    a, b = (collections.Counter(i for ranks in (first, other)[j] for i in ids_of(ranks[k])) for j in (0, 1))
    print(f"epoch {epoch}: {sum(a.values())} items by {LOADER['num_workers']} workers, {sum(b.values())} by {OTHER_WORKERS}")
    counted.append((epoch, a, b, sorted(i for i in a.keys() | b.keys() if a[i] != b[i])))
"""
# The epochs EPOCHS read by fresh workers, then by persistent ones (set_epoch before each epoch).
KEPT_READ = """print(f"{SPEC}: N={N}, W={W}, epochs {EPOCHS}, {OPTIONS}, DataLoader({LOADER})")
fresh = [read(build(r), r, LOADER_SEEDS[r], EPOCHS) for r in range(W)]
kept = [read(build(r), r, KEPT_SEEDS[r], EPOCHS, persistent_workers=True) for r in range(W)]
for k, epoch in enumerate(EPOCHS):
    for r in range(W):
        print(f"epoch {epoch}, rank {r}: {short(ids_of(fresh[r][k]))} by fresh workers, {short(ids_of(kept[r][k]))} by persistent")
streams = [(e, r, ids_of(fresh[r][k]), ids_of(kept[r][k])) for k, e in enumerate(EPOCHS) for r in range(W)]
differ = [(e, r, a, b) for e, r, a, b in streams if a != b]
"""
ALIKE = "broken = len(orders[0]) >= MIN_COMPARABLE and all(order == orders[0] for order in orders)\n"

ORDER_SNIPPETS = {
    "stream_deterministic": Snippet(
        "two datasets built alike and read alike yield the same stream on every rank.",
        "broken = first != second\n"
        "r = next((r for r in range(W) if first[r] != second[r]), 0)\n"
        'shown = f"rank {r} read {short(first[r])}, then {short(second[r])}"',
        reading=TWICE,
        imports=(),
        setup=_again,
    ),
    "stream_reshuffles": Snippet(
        "with shuffle=True and set_epoch(e) before each of the epochs {EPOCHS}, not every epoch (ranks "
        "concatenated, {MIN_COMPARABLE} items or more) is in the first one's order.",
        ALIKE + 'shown = f"{len(EPOCHS)} epochs all in the order {short(orders[0])}"',
        reading=EPOCHS_READ,
        imports=(),
        setup=_epochs,
    ),
    "stream_seed_effective": Snippet(
        "with shuffle=True, datasets built with the seeds {SEEDS} are not all in one order at the epoch read "
        "(ranks concatenated, {MIN_COMPARABLE} items or more).",
        ALIKE + 'shown = f"seeds {SEEDS} all gave the order {short(orders[0])}"',
        reading=SEEDS_READ,
        imports=(),
        setup=_seeds,
    ),
    "epoch_reaches_workers": Snippet(
        "after set_epoch(e), persistent workers read the stream fresh workers read, on every rank: the epoch "
        "reaches the copy of the dataset each persistent worker keeps.",
        "broken = bool(differ)\n"
        "e, r, a, b = (differ or streams)[0]\n"
        'shown = f"after set_epoch({e}), rank {r} read {short(a)} by fresh workers, {short(b)} by persistent ones"',
        reading=KEPT_READ,
        imports=(),
        setup=_persistent,
    ),
    "same_items_any_workers": Snippet(
        "each epoch's items, all ranks together, counted, are the same whatever the number of workers.",
        "epoch, a, b, differs = next((c for c in counted if c[3]), counted[0])\n"
        "broken = bool(differs)\n"
        "shown = f\"epoch {epoch}, (id, count by {LOADER['num_workers']} workers, by {OTHER_WORKERS}): \"\n"
        "shown += short((i, a[i], b[i]) for i in differs)",
        reading=OTHER_WORKERS_READ,
        setup=_other_workers,
    ),
}
