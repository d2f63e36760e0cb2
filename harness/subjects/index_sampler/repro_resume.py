"""The resumable invariants a reproduction script asserts (``+resumable``, ``+elastic``): the
resume protocol of ``scenarios/resume.py`` in plain Python, one checkpoint taken after the k
items the test drew, and the promise that failed. The same promises as ``resume_checks.py``
says them, for a reader without the suite.

Each rank, as the suite reads it: the uninterrupted run (a sampler built, ``set_epoch(e)``,
one pass, then each later epoch on the same object); then a fresh sampler, ``set_epoch(e)``,
its first k items and ``state_dict()``, carried through ``torch.save`` and
``torch.load(weights_only=True)`` as a checkpoint carries it, into another fresh sampler:
``load_state_dict(state)``, ``set_epoch(e)``, the rest of the pass and the later epochs. The
global RNGs are seeded with the same seed before every build, as the suite seeds them."""

from __future__ import annotations

from .repro_snippets import Snippet

# $k: the items each rank read before its checkpoint; LATER, the epochs read after the resumed one,
# is each snippet's own (resumed()).
RESUMED = """K, LATER = $k, {later}  # items each rank read before its checkpoint (as drawn); epochs read after
GLOBAL_SEED = 0  # torch's, numpy's and random's global RNGs are seeded with it before every build


def seed_global_rngs():
    torch.manual_seed(GLOBAL_SEED)
    numpy.random.seed(GLOBAL_SEED)
    random.seed(GLOBAL_SEED)


def set_epoch(sampler, epoch):
    if callable(getattr(sampler, "set_epoch", None)):
        sampler.set_epoch(epoch)


def through_checkpoint(state):
    \"\"\"As a checkpoint carries it: torch.save, then torch.load(weights_only=True); as it was if it cannot.\"\"\"
    buffer = io.BytesIO()
    try:
        torch.save(state, buffer)
        buffer.seek(0)
        return torch.load(buffer, weights_only=True)
    except Exception:
        return state


uninterrupted, taken, resumed = [], [], []
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
    taken.append(list(itertools.islice(iter(sampler), min(K, len(passes[0])))))
    state = through_checkpoint(sampler.state_dict())
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
        "due = collections.Counter(i for r in range(W) for i in uninterrupted[r][0])\n"
        "got = collections.Counter(i for r in range(W) for i in taken[r] + resumed[r][0])\n"
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
}
