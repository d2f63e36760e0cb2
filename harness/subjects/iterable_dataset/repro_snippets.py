"""What a streaming dataset's reproduction script (``repro.py``) reads and asserts for the
invariants of one epoch of every rank: each flag's :class:`Snippet`, its reading (every rank's
dataset built and read through its DataLoader for the epoch, as ``epoch_of`` in the script's
head does) and its promise."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .case import StreamCase


def as_recorded(case: StreamCase, record: Mapping[str, Any]) -> tuple[StreamCase, dict[str, Any]]:
    """The case the script's head describes (the one read, the epoch it was read at), and the
    constants the reading adds: here the counterexample's own case, and none."""
    return case, {}


def loader_seeds(case: StreamCase, reading: int = 0) -> list[int]:
    """Each rank's DataLoader generator's seed in ``reading`` of ``case``, which the tests read
    as drawn, before any epoch is set (``case.loader_seed``)."""
    drawn_case = case.with_(epoch=None)
    return [drawn_case.loader_seed(rank, reading) for rank in range(case.world_size)]


class Code(str):
    """A constant the script's head writes as this code, not as its repr."""

    def __repr__(self) -> str:
        return str(self)


@dataclass(frozen=True)
class Snippet:
    promise: str
    code: str  # sets broken and shown
    reading: str = ""  # READ_ALL unless given
    imports: tuple[str, ...] = ("collections",)
    setup: Callable[[StreamCase, Mapping[str, Any]], tuple[StreamCase, dict[str, Any]]] = as_recorded

    @property
    def read(self) -> str:
        return self.reading or READ_ALL


# How the script reads the ranks: each rank's batches, (worker, ids), and every id counted.
READ_ALL = """ranks = [epoch_of(r) for r in range(W)]
print(f"{SPEC}: N={N}, W={W}, epoch={EPOCH}, {OPTIONS}, DataLoader({LOADER})")
for r, batches in enumerate(ranks):
    print(f"rank {r} ({len(batches)} batches, {len(ids_of(batches))} items): {short(ids_of(batches))}")
counts = collections.Counter(i for batches in ranks for i in ids_of(batches))
missing = [i for i in range(N) if not counts[i]]
repeated = sorted(i for i, n in counts.items() if n > 1)
"""


def until_raised(read: str, shown: str, caught: str = "Exception", found: str = "fault", fault: str = "") -> str:
    """Each rank in turn, ``read`` then ``shown`` (a print), up to the first whose reading raises
    ``caught``: the variable ``found`` then says which rank raised what (empty where none did).
    ``fault``: what may raise, said beside the except, where it is the dataset's fault: its
    traceback is printed too."""
    said = f"  # {fault}" if fault else ""
    traced = "        traceback.print_exc(file=sys.stdout)\n" if fault else ""
    return f"""{found} = ""
for r in range(W):
    try:
        {read}
    except {caught} as exc:{said}
        {found} = f"rank {{r}}: {{type(exc).__name__}}: {{exc}}"
{traced}        break
    {shown}
"""


# One epoch of each rank in turn, after the head's line.
EPOCH_HEAD = 'print(f"{SPEC}: N={N}, W={W}, epoch={EPOCH}, {OPTIONS}, DataLoader({LOADER})")\n'
READ_EPOCH = "batches = epoch_of(r)"
SHOWN_EPOCH = 'print(f"rank {r} ({len(batches)} batches, {len(ids_of(batches))} items): {short(ids_of(batches))}")'
# ... up to the first that raises: its exception is the fault, its traceback printed.
FAULT = EPOCH_HEAD + until_raised(
    READ_EPOCH, SHOWN_EPOCH, fault="the dataset's own: in the factory, set_epoch, or its workers' reading"
)
# ... up to the first item without an id.
WITHOUT_ID = EPOCH_HEAD + until_raised(READ_EPOCH, SHOWN_EPOCH, caught="NoId", found="no_id")

ONE_EPOCH_SNIPPETS = {
    "stream_runs": Snippet(
        "every rank's dataset is built, set to its epoch and read through its DataLoader without raising.",
        "broken = bool(fault)\nshown = fault",
        reading=FAULT,
        imports=("traceback",),
    ),
    "item_ids": Snippet(
        "every item carries an id: an int (or a 0-d integer tensor), alone, under the key 'id', or first in a tuple.",
        "broken = bool(no_id)\nshown = no_id",
        reading=WITHOUT_ID,
        imports=(),
    ),
    "no_foreign_items": Snippet(
        "every id read is one the dataset holds, 0 .. N-1.",
        'foreign = sorted(i for i in counts if not 0 <= i < N)\nbroken = bool(foreign)\nshown = f"ids outside 0 .. {N - 1}: {short(foreign)}"',
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
    # The case gives every (rank, worker) pair a non-empty shard of its own, and a batch of items.
    "no_starved_worker": Snippet(
        "every (rank, worker) pair yields items: the layout has a non-empty shard for each.",
        'pairs = [(r, w) for r in range(W) for w in (range(LOADER["num_workers"]) or [-1])]\n'
        "idle = [(r, w) for r, w in pairs if w not in {worker for worker, _ in ranks[r]}]\n"
        "broken = bool(idle)\n"
        'shown = f"(rank, worker) pairs that yielded nothing (worker -1: the rank\'s own process): {idle}"',
    ),
}
