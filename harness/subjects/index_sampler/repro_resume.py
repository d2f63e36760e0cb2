"""The resumable and elastic invariants a reproduction script asserts (``+resumable``,
``+elastic``): the resume protocol of ``scenarios/resume.py`` in plain Python, one checkpoint
taken after the k items the test drew, and the promise that failed; and the elastic protocol
of ``scenarios/elastic.py``, one change of world size (``ELASTIC``). The same promises as
``resume_checks.py`` and ``elastic_checks.py`` say them, for a reader without the suite.

Each rank, as the suite reads it: the uninterrupted run (a sampler built, ``set_epoch(e)``,
one pass, then each later epoch on the same object); then a fresh sampler, ``set_epoch(e)``,
its first k items and ``state_dict()``, carried through ``torch.save`` and
``torch.load(weights_only=True)`` as a checkpoint carries it, into another fresh sampler:
``load_state_dict(state)``, ``set_epoch(e)``, the rest of the pass and the later epochs. The
global RNGs are seeded with the same seed before every build, as the suite seeds them."""

from __future__ import annotations

from sampler_conformance.subjects.common.repro_script import THROUGH_CHECKPOINT

from .repro_snippets import Snippet

# What every resume's reading shares: the global RNGs seeded before every build (SEEDED), a
# guarded set_epoch and a state carried as a checkpoint carries it (CARRIED).
SEEDED = """GLOBAL_SEED = $global_seed  # torch's, numpy's and random's global RNGs are seeded with it before every build


def seed_global_rngs(seed=GLOBAL_SEED):
    torch.manual_seed(seed)
    numpy.random.seed(seed % 2**32)
    random.seed(seed)


"""
CARRIED = (
    """def set_epoch(sampler, epoch):
    if callable(getattr(sampler, "set_epoch", None)):
        sampler.set_epoch(epoch)


"""
    + THROUGH_CHECKPOINT
    + """


"""
)
HELPERS = SEEDED + CARRIED
# $k: the items each rank read before its checkpoint; LATER, the epochs read after the resumed one,
# is each snippet's own (resumed()).
RESUMED = (
    """K, LATER = $k, {later}  # items each rank read before its checkpoint (as drawn); epochs read after
"""
    + HELPERS
    + """uninterrupted, taken, resumed = [], [], []
for r in range(W):
    seed_global_rngs()
    sampler = build(W, r, epoch=None)
    passes = []
    for epoch in range(EPOCH, EPOCH + 1 + LATER):
        set_epoch(sampler, epoch)
        passes.append(read(W, r, sampler)[0])
    uninterrupted.append(passes)
    seed_global_rngs()
    sampler = build(W, r, epoch=None)
    set_epoch(sampler, EPOCH)
    taken.append(take(sampler, min(K, len(passes[0]))))
    state, _ = through_checkpoint(sampler.state_dict())
    seed_global_rngs()
    sampler = build(W, r, epoch=None)
    sampler.load_state_dict(state)
    passes = []
    for epoch in range(EPOCH, EPOCH + 1 + LATER):
        set_epoch(sampler, epoch)
        passes.append(read(W, r, sampler)[0])
    resumed.append(passes)
print(f"{SPEC}: N={N}, W={W}, {OPTIONS}, epoch {EPOCH} interrupted after {K} items on each rank")
for r in range(W):
    print(f"rank {r}: uninterrupted {short(uninterrupted[r][0])}; before the checkpoint {short(taken[r])}; "
          f"resumed {short(resumed[r][0])}")
"""
)
# The epoch read whole on W ranks gives its global order, and, with drop_last, the whole order
# read without it, whose tail W' ranks may drop otherwise.
EPOCH_ORDER = """def interleaved(shares):
    \"\"\"The global order the ranks take turns through: item i of rank r at position i * W + r.\"\"\"
    longest = max(map(len, shares), default=0)
    return [share[i] for i in range(longest) for share in shares if i < len(share)]


def whole_epoch(**options):
    passes = []
    for r in range(W):
        seed_global_rngs()
        sampler = build(W, r, epoch=None, **options)
        set_epoch(sampler, EPOCH)
        passes.append(read(W, r, sampler)[0])
    return passes


DROP_LAST = OPTIONS.get("drop_last", False)
whole = whole_epoch()
order = interleaved(whole)[:$epoch_units]  # the epoch's global order, its padding cut off
undropped = interleaved(whole_epoch(drop_last=False))[:$whole_units] if DROP_LAST else order
"""
# ... W ranks take k items each of the epoch and save; W' fresh ranks load rank 0's state and
# read the rest (scenarios/elastic.py).
ELASTIC = (
    """K, W2 = $k, $new_world  # items each of the W ranks read before the checkpoint (as drawn); ranks resumed on
"""
    + HELPERS
    + EPOCH_ORDER
    + """taken = []
for r in range(W):
    seed_global_rngs()
    sampler = build(W, r, epoch=None)
    set_epoch(sampler, EPOCH)
    taken.append(take(sampler, min(K, len(whole[r]))))
    if r == 0:
        state, _ = through_checkpoint(sampler.state_dict())  # rank 0's state is the one resumed on W' ranks
rest = []
for r in range(W2):
    seed_global_rngs()
    sampler = build(W2, r, epoch=None)
    sampler.load_state_dict(state)
    set_epoch(sampler, EPOCH)
    rest.append(read(W2, r, sampler)[0])
at = min(len(order), sum(map(len, taken)))  # the global cursor: items the W ranks took in all
got = interleaved(rest)
print(f"{SPEC}: N={N}, {OPTIONS}, epoch {EPOCH}: {K} items on each of W={W} ranks, then resumed on W'={W2}")
print(f"global order {short(order)}; taken {short(interleaved(taken))}; the new ranks, interleaved: {short(got)}")
"""
)
IMPORTS = ("io", "random", "numpy", "torch")


def resumed(later_epochs: int) -> str:
    """The reading, with ``later_epochs`` read after the resumed pass (as the failing test reads them)."""
    return RESUMED.replace("{later}", str(later_epochs))


RESUME_SNIPPETS = {
    "resume_continues": Snippet(
        "resumed after k items, every rank yields the rest of its uninterrupted epoch: the k items and the "
        "resumed pass are that epoch, item for item.",
        "wrong = [r for r in range(W) if taken[r] + resumed[r][0] != uninterrupted[r][0]]\n"
        "broken = bool(wrong)\n"
        'shown = "; ".join(f"rank {r} should go on with {short(uninterrupted[r][0][len(taken[r]):])}, "\n'
        '                  f"went on with {short(resumed[r][0])}" for r in wrong[:2])',
        reading=resumed(0),
        imports=IMPORTS,
    ),
    "resume_exactly_once": Snippet(
        "across the ranks, the interrupted epoch repeats no item beyond the uninterrupted epoch's padding and "
        "loses none.",
        "due = collections.Counter(i for r in range(W) for i in $items(uninterrupted[r][0]))\n"
        "got = collections.Counter(i for r in range(W) for i in $items(taken[r] + resumed[r][0]))\n"
        "repeated = sorted(i for i in got if got[i] > due[i])\n"
        "lost = sorted(i for i in due if not got[i])\n"
        "broken = bool(repeated or lost)\n"
        'shown = f"repeated: {short(repeated)}; never yielded: {short(lost)}"',
        reading=resumed(0),
        imports=(*IMPORTS, "collections"),
    ),
    "later_epochs_after_resume": Snippet(
        "after a resume, each later epoch is the uninterrupted run's: the skip does not persist.",
        "wrong = [(EPOCH + k, r) for k in range(1, 1 + LATER) for r in range(W) if resumed[r][k] != uninterrupted[r][k]]\n"
        "broken = bool(wrong)\n"
        'shown = "; ".join(f"epoch {e}, rank {r}: uninterrupted {short(uninterrupted[r][e - EPOCH])}, "\n'
        '                  f"resumed {short(resumed[r][e - EPOCH])}" for e, r in wrong[:2])',
        reading=resumed(2),
        imports=IMPORTS,
    ),
    "elastic_cursor": Snippet(
        "resumed on W' ranks after k items on each of W, the new ranks, interleaved, go on with the rest of "
        "the epoch's global order, then fewer than W' padding items of the epoch (with drop_last: a prefix of "
        "the whole order's rest, short of the epoch's rest by fewer than W' items).",
        "due = order[at:]\n"
        "if DROP_LAST:\n"
        "    broken = got != undropped[at:][: len(got)] or len(got) < len(due) - (W2 - 1)\n"
        "else:\n"
        "    padding = got[len(due) :]\n"
        "    broken = (got[: len(due)] != due or len(padding) > -len(due) % W2\n"
        "              or not set($items(padding)) <= set($items(order)))\n"
        'shown = f"after {at} items the rest is {short(due)}; the new ranks yield {short(got)}"',
        reading=ELASTIC,
        imports=IMPORTS,
    ),
    "elastic_exactly_once": Snippet(
        "across the change of world size, no item repeats beyond the padding W' ranks need and none is lost "
        "(with drop_last: none repeats, and fewer than W' are lost).",
        "due = collections.Counter(i for share in whole for i in $items(share))\n"
        "counts = collections.Counter(i for share in taken + rest for i in $items(share))\n"
        "left = len(order) - at\n"
        "beyond = {i: 1 for i in range(N)} if DROP_LAST else due\n"
        "surplus = sum(max(n - beyond.get(i, 0), 0) for i, n in counts.items())\n"
        "lost = sorted(i for i in due if not counts[i])\n"
        "broken = surplus > (0 if DROP_LAST else -left % W2$per_unit) or len(lost) > ((W2 - 1)$per_unit if DROP_LAST else 0)\n"
        "repeated = sorted(i for i, n in counts.items() if n > beyond.get(i, 0))\n"
        'shown = f"{surplus} items repeated: {short(repeated)}; never yielded: {short(lost)}"',
        reading=ELASTIC,
        imports=(*IMPORTS, "collections"),
    ),
}
